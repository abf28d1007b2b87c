// The metadata ladder: where a metadata miss asks for an object's info,
// in order, by what the read wants and what this node holds (metaPlan),
// and the walk that asks them (askMeta). What a load serves when the
// origin does not answer is loadInfo's.
package gateway

import (
	"context"

	"github.com/granary-dev/granary/store"
)

// metaRung is one place a metadata load asks for an object's info.
type metaRung uint8

const (
	// metaHeir is a former owner of the object's first chunk, from its
	// metadata cache (a hand-off never reaches the origin); it may not
	// know the object, and the walk goes on.
	metaHeir metaRung = iota
	// metaWithFirst is the origin, with the first chunk in the same call
	// (fetchWithFirstChunk).
	metaWithFirst
	// metaOwnersFirst is the first chunk's owners, with that chunk, then
	// the origin's Stat (firstFromOwners).
	metaOwnersFirst
	// metaOwnersHead is the first chunk's owners, the info alone, then
	// the origin's Stat (headFromOwners).
	metaOwnersHead
	// metaStat is the origin's Stat.
	metaStat
)

var metaRungNames = [...]string{metaHeir: "heir", metaWithFirst: "origin+chunk",
	metaOwnersFirst: "owners+chunk", metaOwnersHead: "owners", metaStat: "stat"}

func (r metaRung) String() string { return metaRungNames[r] }

// The metadata plans (metaPlan).
var (
	metaRevalidate = []metaRung{metaStat}
	metaOwnChunk   = []metaRung{metaHeir, metaWithFirst}
	metaOwnInfo    = []metaRung{metaHeir, metaStat}
	metaAskChunk   = []metaRung{metaOwnersFirst}
	metaAskInfo    = []metaRung{metaOwnersHead}
)

// metaPlan is where a metadata load asks: had says a stale entry exists
// (a revalidation is the origin's to answer); owns that this node reads
// the object's first chunk itself (else its owners are asked, who read
// the origin once for the cluster); chunk that the load may bring the
// first chunk along (the read wants it and no tier holds a version of
// the object, whose data is then local).
func metaPlan(had, owns, chunk bool) []metaRung {
	switch {
	case had:
		return metaRevalidate
	case owns && chunk:
		return metaOwnChunk
	case owns:
		return metaOwnInfo
	case chunk:
		return metaAskChunk
	}
	return metaAskInfo
}

// askMeta asks rungs in order for bucket/key's info; the first that
// answers gives it, with the first chunk's flight (started with want, or
// joined) if it brought the chunk.
func (e *Engine) askMeta(ctx context.Context, bucket, key string, want intent, rungs []metaRung) (store.ObjectInfo, *flight, error) {
	var info store.ObjectInfo
	for _, r := range rungs {
		var err error
		switch r {
		case metaHeir:
			if !e.fromHeir(ctx, bucket, key, &info) {
				continue
			}
		case metaWithFirst:
			return e.fetchWithFirstChunk(ctx, bucket, key, want)
		case metaOwnersFirst:
			return e.firstFromOwners(ctx, bucket, key, want)
		case metaOwnersHead:
			info, err = e.headFromOwners(ctx, bucket, key)
		case metaStat:
			info, err = e.origin.Stat(ctx, bucket, key)
		}
		return info, nil, err
	}
	// Every plan ends at a rung that answers; one that did not would
	// still have the origin's.
	info, err := e.origin.Stat(ctx, bucket, key)
	return info, nil, err
}
