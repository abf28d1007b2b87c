// Pinning in the RAM tier: chunks of objects Options.Pins says are pinned
// are never evicted. Eviction asks the PinSet about each victim it
// examines; the pinned ones are set aside, out of the policy, until the
// pin generation changes (Granary issue 6).
package ram

// Pinned chunks are kept out of the eviction order, so a tier mostly full
// of them does not ask about them again on every eviction:
//
//   - A shard's aside list holds chunks of its own that eviction found
//     pinned; they stay in the shard's maps (Get, Versions, Held,
//     DeleteObject, UsedBytes and Chunks see them as before) and out of
//     its policy. Get of an aside chunk leaves it where it is.
//   - Tier.judged is the pin generation of every aside list: each aside
//     chunk was found pinned by a Pinned call made after Generation
//     returned judged. When Generation differs at the next eviction,
//     judgePins asks again about every aside chunk, under Tier.mu, and
//     returns the unpinned ones to the policy as the most recent.
//   - entry.freeGen caches "not pinned" for one generation, so eviction
//     asks about an evictable chunk once per generation, not once per
//     Put that looks at it.
//
// Generation is always read before the Pinned calls it tags: a pin change
// racing with them moves Generation past the tag, and the next eviction
// asks again. Get never calls the PinSet; Put calls it only when it must
// evict.

// judgePins returns the current pin generation (0 without pins), first
// judging again the aside chunks of every shard if it changed since they
// were judged. Caller holds t.mu.
func (t *Tier) judgePins() uint64 {
	if t.pins == nil {
		return 0
	}
	gen := t.pins.Generation()
	if gen == t.judged {
		return gen
	}
	now := t.now()
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.rejudge(t, gen, now)
		s.mu.Unlock()
	}
	t.judged = gen
	return gen
}

// rejudge returns to the policy (as most recent, at now) the aside chunks
// no longer pinned under generation gen. Chunks of one object are usually
// next to each other in the list, so one answer serves a run of them.
// Caller holds t.mu and s.mu.
func (s *shard) rejudge(t *Tier, gen uint64, now int64) {
	root := &s.aside.root
	var last objectKey
	lastPinned, asked := false, false
	for e := root.next; e != root; {
		next := e.next
		if k := (objectKey{e.id.Bucket, e.id.Key}); !asked || k != last {
			last, lastPinned, asked = k, t.pins.Pinned(k.bucket, k.key), true
		}
		if !lastPinned {
			s.aside.removed(e)
			e.aside, e.freeGen = false, gen+1
			s.policy.added(e, now)
		}
		e = next
	}
}

// evictable reports whether e may be evicted under pin generation gen
// (read before this call): no pins, or e's object not pinned. Caller
// holds t.mu and the mutex of e's shard.
func (t *Tier) evictable(e *entry, gen uint64) bool {
	if t.pins == nil || e.freeGen == gen+1 {
		return true
	}
	if t.pins.Pinned(e.id.Bucket, e.id.Key) {
		return false
	}
	e.freeGen = gen + 1
	return true
}

// victim returns the shard's next evictable victim and its rank, or nil
// if the policy holds none, setting aside the pinned chunks ahead of it
// (gen as for evictable). Caller holds t.mu and s.mu.
func (s *shard) victim(t *Tier, gen uint64) (*entry, int64) {
	for {
		e, rank := s.policy.victim()
		if e == nil || t.evictable(e, gen) {
			return e, rank
		}
		s.setAside(e)
	}
}

// setAside moves e, held by the policy, to the aside list. Caller holds
// t.mu and s.mu.
func (s *shard) setAside(e *entry) {
	s.policy.removed(e)
	s.aside.added(e, e.stamp) // the stamp is kept, but unused while aside
	e.aside = true
}

// walkEvictable calls fn, if not nil, on the shard's evictable chunks in
// eviction order until they add up to need bytes, setting aside the
// pinned ones met (gen as for evictable), and returns their bytes.
// Caller holds t.mu and s.mu.
func (s *shard) walkEvictable(t *Tier, gen uint64, need int64, fn func(e *entry, rank int64)) int64 {
	var got int64
	e, rank := s.policy.victim()
	for e != nil && got < need {
		// Take the next one first: setting e aside unlinks it.
		next, nextRank := s.policy.after(e)
		if t.evictable(e, gen) {
			if fn != nil {
				fn(e, rank)
			}
			got += e.size
		} else {
			s.setAside(e)
		}
		e, rank = next, nextRank
	}
	return got
}

// canFree reports whether evicting can free need bytes: whether that
// much is held in chunks not pinned. It walks the shards in turn (setting
// aside the pinned chunks it meets) and stops as soon as it has seen
// enough, so it is cheap unless most of the tier is pinned. Caller holds
// t.mu.
func (t *Tier) canFree(need int64, gen uint64) bool {
	var got int64
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		got += s.walkEvictable(t, gen, need-got, nil)
		s.mu.Unlock()
		if got >= need {
			return true
		}
	}
	return false
}
