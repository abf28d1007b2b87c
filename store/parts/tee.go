// The parts store as a tee (store.PartTee): a store without fsync, emptied
// when opened, for local copies of uploads that stream to the origin.
package parts

import (
	"io"
	"os"

	"github.com/granary-dev/granary/store"
)

// OpenTee empties dir and opens a store of tees there, without fsync
// (what it holds is only worth keeping while this process runs).
func OpenTee(dir string) (store.PartTee, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	s, err := Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		return nil, err
	}
	return tee{s}, nil
}

// tee is a Store whose Assemble returns the contract's Assembled.
type tee struct{ *Store }

var _ store.PartTee = tee{}

func (t tee) Assemble(bucket, key, id string, parts []store.CompletePart) (store.Assembled, error) {
	a, err := t.Store.Assemble(bucket, key, id, parts)
	if err != nil {
		return nil, err
	}
	return assembled{a}, nil
}

func (t tee) AssembleWhole(bucket, key, id string) (store.Assembled, error) {
	a, err := t.Store.AssembleWhole(bucket, key, id)
	if err != nil {
		return nil, err
	}
	return assembled{a}, nil
}

// assembled is an Assembly as a store.Assembled.
type assembled struct{ a *Assembly }

func (a assembled) Size() int64                              { return a.a.Size }
func (a assembled) ETag() string                             { return a.a.ETag }
func (a assembled) Open(off, n int64) (io.ReadCloser, error) { return a.a.Open(off, n) }
func (a assembled) Remove() error                            { return a.a.Remove() }
