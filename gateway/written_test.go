// Unit tests of the writes in flight: a write caches its answer only if
// no other write of its key overlapped it on this node.
package gateway

import "testing"

func TestWritesAlone(t *testing.T) {
	var w writes
	end := w.begin("k")
	if !end() || !end() {
		t.Fatal("a lone write was reported overlapped (or its second end differs)")
	}
	a, b, other := w.begin("k"), w.begin("k"), w.begin("other")
	if b() || a() {
		t.Fatal("two overlapping writes of one key were reported alone")
	}
	if !other() {
		t.Fatal("a write of another key was reported overlapped")
	}
	if len(w.m) != 0 {
		t.Fatalf("%d keys still tracked after every write ended", len(w.m))
	}
	if !w.begin("k")() {
		t.Fatal("a write after the overlap ended was reported overlapped")
	}
}
