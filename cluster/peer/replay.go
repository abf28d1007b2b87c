// Replay protection: a client numbers its requests "boot.seq" (boot: when
// it was made, in Unix nanoseconds; seq: 1, 2, ...), and the receiver
// accepts each number of a sender once. Requests arrive out of order over
// several connections, so each sender's recent numbers are kept in a
// window rather than as one high-water mark.
package peer

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// windowSize is how many of a boot's latest numbers are remembered: a
	// number further behind the highest seen is refused as too old.
	windowSize = 1 << 14
	// maxBoots is how many boots of one sender are remembered (a node
	// restarted, or two clients under one ID): a number of an older boot
	// than all of them is refused.
	maxBoots = 4
	// startGrace: a request stamped this long before the receiver started
	// is refused. A receiver forgets the numbers it saw when it restarts,
	// so this keeps requests captured before then from being replayed;
	// clocks further apart than this delay a restarted node's acceptance
	// of that member's calls by the difference (it reads the origin
	// meanwhile).
	startGrace = 2 * time.Second
)

// replayGuard remembers the numbers each sender used; mu guards senders.
type replayGuard struct {
	started time.Time
	mu      sync.Mutex
	senders map[string][]*seqWindow // by sender, at most maxBoots each
}

// seqWindow is one boot's numbers: top is the highest seen; bit s %
// windowSize of seen is set for each s in (top-windowSize, top] seen.
type seqWindow struct {
	boot int64
	top  uint64
	seen [windowSize / 64]uint64
}

func newReplayGuard(now time.Time) *replayGuard {
	return &replayGuard{started: now, senders: map[string][]*seqWindow{}}
}

// parseNonce splits "boot.seq".
func parseNonce(nonce string) (boot int64, seq uint64, err error) {
	b, s, ok := strings.Cut(nonce, ".")
	if ok {
		if boot, err = strconv.ParseInt(b, 10, 64); err == nil {
			seq, err = strconv.ParseUint(s, 10, 64)
		}
	}
	if !ok || err != nil || seq == 0 {
		return 0, 0, fmt.Errorf("%w: bad nonce", ErrUnauthenticated)
	}
	return boot, seq, nil
}

// accept records sender from's nonce, stamped at, or refuses it: seen
// before, too old, or from before the receiver started.
func (g *replayGuard) accept(from, nonce string, at time.Time) error {
	boot, seq, err := parseNonce(nonce)
	if err != nil {
		return err
	}
	if at.Before(g.started.Add(-startGrace)) {
		return fmt.Errorf("%w: signed before this node started", ErrUnauthenticated)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.window(from, boot)
	if w == nil {
		return fmt.Errorf("%w: a nonce of a boot long gone", ErrUnauthenticated)
	}
	return w.mark(seq)
}

// window returns from's window of boot, made if boot is newer than the
// oldest remembered (which it then replaces once maxBoots are kept); nil
// if it is older.
func (g *replayGuard) window(from string, boot int64) *seqWindow {
	ws := g.senders[from]
	oldest := -1
	for i, w := range ws {
		if w.boot == boot {
			return w
		}
		if oldest < 0 || w.boot < ws[oldest].boot {
			oldest = i
		}
	}
	w := &seqWindow{boot: boot}
	switch {
	case len(ws) < maxBoots:
		g.senders[from] = append(ws, w)
	case boot > ws[oldest].boot:
		ws[oldest] = w
	default:
		return nil
	}
	return w
}

// mark records seq, or refuses it if it was seen or is too far behind.
func (w *seqWindow) mark(seq uint64) error {
	if seq > w.top {
		if seq-w.top >= windowSize {
			w.seen = [windowSize / 64]uint64{}
		} else {
			for s := w.top + 1; s < seq; s++ {
				w.seen[s%windowSize/64] &^= 1 << (s % 64)
			}
		}
		w.top = seq
	} else if w.top-seq >= windowSize {
		return fmt.Errorf("%w: a nonce too far behind", ErrUnauthenticated)
	} else if w.seen[seq%windowSize/64]&(1<<(seq%64)) != 0 {
		return fmt.Errorf("%w: a nonce used before (a replay)", ErrUnauthenticated)
	}
	w.seen[seq%windowSize/64] |= 1 << (seq % 64)
	return nil
}
