// Completed uploads remembered for a repeated CompleteMultipartUpload: a
// client that lost the first answer (a timeout, a retry) completes again,
// and S3 answers 200 with the object's ETag where the origin no longer
// knows the upload. The memory is per node and bounded; a node without it
// judges by the object's ETag (completedAgain in multipart.go).
package gateway

import (
	"sync"

	"github.com/granary-dev/granary/store"
)

// maxFinishedUploads bounds the completions remembered; the oldest go
// first.
const maxFinishedUploads = 4096

// finishedUpload is one completion: the upload's object as completed.
type finishedUpload struct {
	bucket, key string
	info        store.ObjectInfo
}

// finishedUploads remembers the latest completions. The zero value is
// ready to use.
type finishedUploads struct {
	mu    sync.Mutex // guards byID and order
	byID  map[string]finishedUpload
	order []string // upload IDs, oldest first
}

// add remembers that uploadID completed as info.
func (f *finishedUploads) add(uploadID string, info store.ObjectInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		f.byID = make(map[string]finishedUpload)
	}
	if _, ok := f.byID[uploadID]; !ok {
		f.order = append(f.order, uploadID)
	}
	f.byID[uploadID] = finishedUpload{bucket: info.Bucket, key: info.Key, info: info}
	for len(f.order) > maxFinishedUploads {
		delete(f.byID, f.order[0])
		f.order = f.order[1:]
	}
}

// lookup returns the object uploadID completed as, if it completed
// bucket/key.
func (f *finishedUploads) lookup(bucket, key, uploadID string) (store.ObjectInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.byID[uploadID]
	if !ok || d.bucket != bucket || d.key != key {
		return store.ObjectInfo{}, false
	}
	return d.info, true
}
