// Listing of a bucket's open uploads, from the in-memory index: key order,
// then initiation order (which is ID order, see newID), grouped by prefix
// and delimiter as an object listing is.
package parts

import (
	"slices"
	"strings"

	"github.com/granary-dev/granary/store"
)

// ListUploads lists the bucket's open uploads as
// store.Multipart.ListUploads. Sealed uploads are not listed.
func (s *Store) ListUploads(bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.UploadPage{}, errClosed
	}
	var all []store.UploadInfo
	for _, u := range s.uploads {
		if u.bucket == bucket && u.open() && strings.HasPrefix(u.key, opts.Prefix) {
			all = append(all, store.UploadInfo{Key: u.key, UploadID: u.id, Initiated: u.initiated})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, compareUploads)
	return pageUploads(all, opts), nil
}

// compareUploads orders uploads by key, then initiation, then ID.
func compareUploads(a, b store.UploadInfo) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := a.Initiated.Compare(b.Initiated); c != 0 {
		return c
	}
	return strings.Compare(a.UploadID, b.UploadID)
}

// pageUploads cuts one page from all (sorted, every key with the prefix).
// A common prefix is emitted at its first upload; it is skipped when it
// does not sort after KeyAfter (an earlier page held it, and every key
// under it). An upload of KeyAfter itself is listed only when
// UploadIDAfter is set and the upload sorts after that one.
func pageUploads(all []store.UploadInfo, opts store.UploadListOptions) store.UploadPage {
	limit := opts.MaxUploads
	if limit <= 0 {
		limit = defaultMaxList
	}
	markerNano, markerHasTime := idNano(opts.UploadIDAfter)
	after := func(u store.UploadInfo) bool {
		if u.Key != opts.KeyAfter {
			return u.Key > opts.KeyAfter
		}
		if opts.UploadIDAfter == "" {
			return false
		}
		if markerHasTime && u.Initiated.UnixNano() != markerNano {
			return u.Initiated.UnixNano() > markerNano
		}
		return u.UploadID > opts.UploadIDAfter
	}
	var page store.UploadPage
	var lastKey, lastID, lastCP string
	for _, u := range all {
		cp, rolled := commonPrefix(u.Key, opts.Prefix, opts.Delimiter)
		switch {
		case rolled && (cp == lastCP || cp <= opts.KeyAfter):
			continue
		case !rolled && !after(u):
			continue
		}
		if len(page.Uploads)+len(page.CommonPrefixes) == limit {
			page.IsTruncated = true
			page.NextKeyAfter, page.NextUploadIDAfter = lastKey, lastID
			break
		}
		if rolled {
			page.CommonPrefixes = append(page.CommonPrefixes, cp)
			lastCP, lastKey, lastID = cp, cp, ""
			continue
		}
		page.Uploads = append(page.Uploads, u)
		lastKey, lastID = u.Key, u.UploadID
	}
	return page
}

// commonPrefix returns the common prefix key rolls up into: up to and
// including the first delimiter after prefix.
func commonPrefix(key, prefix, delim string) (string, bool) {
	if delim == "" {
		return "", false
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return "", false
	}
	return key[:len(prefix)+i+len(delim)], true
}
