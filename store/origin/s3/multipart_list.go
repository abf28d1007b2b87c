// Listings of multipart uploads and their parts at an S3 origin: one
// request per page, with the page put in the store's order and cut to
// size here, since servers do not all honour the S3 rules.
package s3

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// defaultMaxList is S3's page size for parts and uploads.
const defaultMaxList = 1000

// ListParts returns a page of the upload's parts: those numbered above
// opts.After, in ascending order. Parts the server sends outside the page
// are dropped, and the next page starts after the last part kept.
func (o *Origin) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	if err := checkUpload(bucket, key, uploadID); err != nil {
		return store.PartPage{}, err
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = defaultMaxList
	}
	var res minio.ListObjectPartsResult
	var err error
	if isBlank(key) {
		res, err = o.blankListParts(ctx, bucket, key, uploadID, max(opts.After, 0), opts.MaxParts)
	} else {
		res, err = o.core.ListObjectParts(ctx, bucket, key, uploadID, max(opts.After, 0), opts.MaxParts)
	}
	if err != nil {
		return store.PartPage{}, wrap(ctx, "list parts", bucket, key, err)
	}
	var page store.PartPage
	for _, p := range res.ObjectParts {
		if p.PartNumber > opts.After {
			page.Parts = append(page.Parts, store.PartInfo{
				Number: p.PartNumber, ETag: strings.Trim(p.ETag, `"`), Size: p.Size,
				LastModified: p.LastModified.UTC(),
			})
		}
	}
	slices.SortFunc(page.Parts, func(a, b store.PartInfo) int { return cmp.Compare(a.Number, b.Number) })
	page.IsTruncated = res.IsTruncated
	if len(page.Parts) > opts.MaxParts {
		page.Parts, page.IsTruncated = page.Parts[:opts.MaxParts], true
	}
	if page.IsTruncated {
		page.NextAfter = opts.After
		if n := len(page.Parts); n > 0 {
			page.NextAfter = page.Parts[n-1].Number
		} else if res.NextPartNumberMarker > opts.After {
			page.NextAfter = res.NextPartNumberMarker
		} else {
			page.IsTruncated = false // no way forward: end rather than loop
		}
	}
	return page, nil
}

// ListUploads returns a page of bucket's uploads in progress.
//
// Servers differ, so the answer is normalised here: MinIO, asked without
// a prefix, sends every upload of the bucket in order of initiation and
// ignores the markers, the delimiter and the page size; asked with a
// prefix, it lists the uploads of the key equal to the prefix only (so
// a prefix that is no key finds nothing, which this origin passes on),
// and sends no NextKeyMarker. Entries are therefore filtered by prefix
// and position, grouped by the delimiter, sorted by key (keeping the
// server's order, initiation, among the uploads of one key), cut to
// MaxUploads, and the next position is taken from the last entry kept.
// (MinIO refuses a position whose key ends in "/" with an upload ID: a
// page that ends on an upload of such a key cannot be followed there.)
func (o *Origin) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	if err := checkBucket(bucket); err != nil {
		return store.UploadPage{}, err
	}
	if opts.MaxUploads <= 0 {
		opts.MaxUploads = defaultMaxList
	}
	if opts.KeyAfter != "" && !strings.HasPrefix(opts.KeyAfter, opts.Prefix) {
		if opts.KeyAfter > opts.Prefix {
			return store.UploadPage{}, nil // every key under the prefix sorts before it
		}
		opts.KeyAfter, opts.UploadIDAfter = "", "" // every key under the prefix sorts after it
	}
	keyMarker := opts.KeyAfter
	if opts.UploadIDAfter == "" && isCommonPrefix(opts.KeyAfter, listOpts(opts)) {
		keyMarker += pastPrefix // past the keys the prefix stands for
	}
	res, err := o.core.ListMultipartUploads(ctx, bucket, opts.Prefix, keyMarker, opts.UploadIDAfter, opts.Delimiter, opts.MaxUploads)
	if err != nil {
		return store.UploadPage{}, wrap(ctx, "list uploads", bucket, "", err)
	}
	entries := uploadEntries(res, opts)
	var page store.UploadPage
	if len(entries) > opts.MaxUploads {
		entries, page.IsTruncated = entries[:opts.MaxUploads], true
	}
	for _, e := range entries {
		if e.cp {
			page.CommonPrefixes = append(page.CommonPrefixes, e.key)
		} else {
			page.Uploads = append(page.Uploads, e.UploadInfo)
		}
	}
	if page.IsTruncated || res.IsTruncated {
		page.IsTruncated = nextUploadPosition(&page, entries, res, opts)
	}
	return page, nil
}

// uploadEntry is an upload or (cp) a common prefix in key.
type uploadEntry struct {
	store.UploadInfo
	key string
	cp  bool
}

// listOpts gives the object-listing view of an upload listing, whose
// prefix and delimiter rules are the same.
func listOpts(opts store.UploadListOptions) store.ListOptions {
	return store.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter}
}

// uploadEntries returns the entries of a server's answer that belong on
// the page opts asks for, in order.
func uploadEntries(res minio.ListMultipartUploadsResult, opts store.UploadListOptions) []uploadEntry {
	afterCP := opts.UploadIDAfter == "" && isCommonPrefix(opts.KeyAfter, listOpts(opts))
	var entries []uploadEntry
	for _, u := range res.Uploads {
		if !strings.HasPrefix(u.Key, opts.Prefix) {
			continue
		}
		e := uploadEntry{key: u.Key, UploadInfo: store.UploadInfo{Key: u.Key, UploadID: u.UploadID, Initiated: u.Initiated.UTC()}}
		if opts.Delimiter != "" {
			if i := strings.Index(u.Key[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				e = uploadEntry{key: u.Key[:len(opts.Prefix)+i+len(opts.Delimiter)], cp: true}
			}
		}
		entries = append(entries, e)
	}
	for _, cp := range res.CommonPrefixes {
		if strings.HasPrefix(cp.Prefix, opts.Prefix) {
			entries = append(entries, uploadEntry{key: cp.Prefix, cp: true})
		}
	}
	// Stable: the uploads of one key keep the server's order.
	slices.SortStableFunc(entries, func(a, b uploadEntry) int { return strings.Compare(a.key, b.key) })
	entries = slices.CompactFunc(entries, func(a, b uploadEntry) bool { return a.cp && b.cp && a.key == b.key })

	// Drop what lies at or before the position (KeyAfter, UploadIDAfter).
	// The uploads of KeyAfter after UploadIDAfter are kept: if the marker
	// upload is in the answer (the server ignored the marker), everything
	// of that key up to it goes; if not, the server applied the marker.
	markerAt := -1
	if opts.UploadIDAfter != "" {
		markerAt = slices.IndexFunc(entries, func(e uploadEntry) bool {
			return !e.cp && e.key == opts.KeyAfter && e.UploadID == opts.UploadIDAfter
		})
	}
	kept := entries[:0]
	for i, e := range entries {
		switch {
		case e.key < opts.KeyAfter,
			afterCP && strings.HasPrefix(e.key, opts.KeyAfter),
			e.key == opts.KeyAfter && (e.cp || opts.UploadIDAfter == "" || i <= markerAt):
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// nextUploadPosition sets the position after a truncated page: its last
// entry, or else (every entry filtered out) the server's markers or its
// last upload. It reports whether that position lies beyond the one the
// page started at; a listing with no way forward ends rather than loop.
func nextUploadPosition(page *store.UploadPage, entries []uploadEntry, res minio.ListMultipartUploadsResult, opts store.UploadListOptions) bool {
	if n := len(entries); n > 0 {
		if last := entries[n-1]; last.cp {
			page.NextKeyAfter = last.key
		} else {
			page.NextKeyAfter, page.NextUploadIDAfter = last.key, last.UploadID
		}
		return true
	}
	key, id := res.NextKeyMarker, res.NextUploadIDMarker
	if n := len(res.Uploads); key == "" && n > 0 {
		key, id = res.Uploads[n-1].Key, res.Uploads[n-1].UploadID
	}
	forward := key > opts.KeyAfter || key == opts.KeyAfter && opts.UploadIDAfter != "" && id != opts.UploadIDAfter
	if !forward {
		return false
	}
	page.NextKeyAfter, page.NextUploadIDAfter = key, id
	return true
}
