// The origin conformance suite against the Log: every bucket write-back
// (each write staged, read back at once, uploaded behind the suite's
// back), and every bucket passing through.
package writeback

import (
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

func TestConformanceWriteBack(t *testing.T) {
	storetest.RunOrigin(t, func(t *testing.T) store.Origin {
		return openLog(t, Options{Origin: s3Origin(t), WriteBack: always})
	})
}

func TestConformancePassThrough(t *testing.T) {
	storetest.RunOrigin(t, func(t *testing.T) store.Origin {
		return openLog(t, Options{Origin: s3Origin(t)})
	})
}
