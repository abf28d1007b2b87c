// Tests of reading /proc/self/mountinfo.
package fuse

import "testing"

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{`/mnt/a\040b`: "/mnt/a b", `/x\011y\134z`: "/x\ty\\z", `/plain`: "/plain", `/bad\04`: `/bad\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
