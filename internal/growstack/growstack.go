// Package growstack grows a new goroutine's stack in one step, before the
// goroutine goes deep: the runtime starts goroutines on small stacks and
// doubles one whenever a call would overflow it, copying every frame on it
// each time, which costs most when the stack is deepest.
package growstack

// Size is how much stack Grow makes room for: enough for a load from the
// origin through minio-go (signing, transport) and a bbolt lookup.
const Size = 16 << 10

// Grow makes the calling goroutine's stack at least Size bytes larger
// than its current use. Called first thing on a fresh goroutine, it costs
// one copy of a shallow stack instead of several of a deep one (on a cold
// pass of small objects, those copies were 7% of a node's CPU).
//
//go:noinline
func Grow() {
	var pad [Size]byte
	use(pad[:])
}

// use keeps pad on the stack: the compiler cannot drop an array whose
// slice a call receives.
//
//go:noinline
func use([]byte) {}
