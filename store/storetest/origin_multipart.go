// Multipart conformance: run by RunOrigin for every origin that implements
// store.Multipart.
package storetest

import (
	"testing"

	"github.com/granary-dev/granary/store"
)

// testMultipart runs the multipart cases, or skips for an origin without
// store.Multipart.
func testMultipart(t *testing.T, o store.Origin) {
	if _, ok := o.(store.Multipart); !ok {
		t.Skip("origin does not implement store.Multipart")
	}
	t.Skip("TODO: multipart cases")
}
