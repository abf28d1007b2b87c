// Tier conformance suite: RunTier runs the same cases against every
// store.Tier implementation (RAM, disk), so they all honour one contract.
package storetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/granary-dev/granary/store"
)

// Sizes used by the suite.
const (
	tierKiB = 1 << 10
	tierMiB = 1 << 20
)

// NewTierFunc builds an empty tier with the given byte budget for one
// case. The factory should register t.Cleanup to close the tier; Close must
// therefore tolerate being called twice.
type NewTierFunc func(t *testing.T, capacity int64) store.Tier

// RunTier runs the tier conformance cases against tiers built by newTier.
// Every case gets a fresh tier.
func RunTier(t *testing.T, newTier NewTierFunc) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*testing.T, NewTierFunc)
	}{
		{"RoundTrip", tierRoundTrip},
		{"GetMissing", tierGetMissing},
		{"PutTwice", tierPutTwice},
		{"Budget", tierBudget},
		{"TooLarge", tierTooLarge},
		{"DeleteObject", tierDeleteObject},
		{"Versions", tierVersions},
		{"Held", tierHeld},
		{"Stats", tierStats},
		{"Concurrent", tierConcurrent},
		{"Closed", tierClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newTier) })
	}
}

// TierPayload returns the deterministic content of a chunk of size bytes
// named id: any reader can check bytes it got back against it without
// remembering what was put. Exported for implementation-specific tests.
func TierPayload(id store.ChunkID, size int) []byte {
	h := fnv.New64a()
	for _, s := range []string{id.Bucket, id.Key, id.ETag, strconv.FormatInt(id.Index, 10)} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], h.Sum64())
	binary.LittleEndian.PutUint64(seed[8:], uint64(size))
	b := make([]byte, size)
	_, _ = rand.NewChaCha8(seed).Read(b) // never fails
	return b
}

// tierMustPut puts data under id and fails the test on error.
func tierMustPut(t *testing.T, tier store.Tier, id store.ChunkID, data []byte) {
	t.Helper()
	if err := tier.Put(id, data); err != nil {
		t.Fatalf("Put(%v, %d bytes): %v", tierName(id), len(data), err)
	}
}

// tierMustGet gets id and fails the test unless it returns exactly want.
func tierMustGet(t *testing.T, tier store.Tier, id store.ChunkID, want []byte) {
	t.Helper()
	got, err := tier.Get(id)
	if err != nil {
		t.Fatalf("Get(%v): %v", tierName(id), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%v): got %d bytes that differ from the %d put", tierName(id), len(got), len(want))
	}
}

// tierMustMiss fails the test unless id is absent (ErrNotFound).
func tierMustMiss(t *testing.T, tier store.Tier, id store.ChunkID) {
	t.Helper()
	got, err := tier.Get(id)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%v) = %d bytes, %v; want ErrNotFound", tierName(id), len(got), err)
	}
}

// tierCheckBudget fails the test if the tier uses more than its capacity.
func tierCheckBudget(t *testing.T, tier store.Tier, capacity int64) {
	t.Helper()
	s := tier.Stats()
	if s.UsedBytes > capacity || s.UsedBytes < 0 {
		t.Fatalf("UsedBytes = %d, capacity %d", s.UsedBytes, capacity)
	}
}

// tierName renders an id for failure messages.
func tierName(id store.ChunkID) string {
	return strconv.Quote(id.Bucket) + "/" + strconv.Quote(id.Key) + "@" + id.ETag + "#" + strconv.FormatInt(id.Index, 10)
}

// tierVersionsOf returns the sorted versions a VersionLister reports for
// bucket/key.
func tierVersionsOf(vl store.VersionLister, bucket, key string) []string {
	vs := append([]string(nil), vl.Versions(bucket, key)...)
	slices.Sort(vs)
	return vs
}
