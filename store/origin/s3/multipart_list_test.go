// Tests of upload listings against a fake server that follows S3's rules
// (prefixes, delimiters, markers and page sizes applied by the server),
// where MinIO, which the conformance suite runs against, does not.
package s3

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// s3Uploads serves ListMultipartUploads over a fixed set of uploads, in
// listing order, as S3 does, and records the queries it was sent.
type s3Uploads struct {
	uploads []store.UploadInfo
	mu      sync.Mutex // guards queries
	queries []map[string]string
}

func (s *s3Uploads) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.queries = append(s.queries, map[string]string{"key-marker": q.Get("key-marker"), "upload-id-marker": q.Get("upload-id-marker")})
	s.mu.Unlock()
	prefix, delim, km, um := q.Get("prefix"), q.Get("delimiter"), q.Get("key-marker"), q.Get("upload-id-marker")
	max, err := strconv.Atoi(q.Get("max-uploads"))
	if err != nil || max <= 0 {
		max = 1000
	}
	markerAt := slices.IndexFunc(s.uploads, func(u store.UploadInfo) bool { return u.Key == km && u.UploadID == um })
	res := xmlUploads{Bucket: "bucket"}
	count, lastCP := 0, ""
	for i, u := range s.uploads {
		if !strings.HasPrefix(u.Key, prefix) || u.Key < km || u.Key == km && (um == "" || i <= markerAt) {
			continue
		}
		cp := ""
		if j := strings.Index(u.Key[len(prefix):], delim); delim != "" && j >= 0 {
			cp = u.Key[:len(prefix)+j+len(delim)]
		}
		if cp != "" && cp == lastCP {
			continue
		}
		if count == max {
			res.IsTruncated = true
			break
		}
		count++
		if cp != "" {
			lastCP = cp
			res.CommonPrefixes = append(res.CommonPrefixes, struct{ Prefix string }{cp})
			res.NextKeyMarker, res.NextUploadIDMarker = cp, ""
			continue
		}
		res.Uploads = append(res.Uploads, xmlUpload{Key: u.Key, UploadID: u.UploadID, Initiated: u.Initiated.Format(time.RFC3339)})
		res.NextKeyMarker, res.NextUploadIDMarker = u.Key, u.UploadID
	}
	w.Header().Set("Content-Type", "application/xml")
	xml.NewEncoder(w).Encode(res)
}

// listUploadsAll pages through a listing and renders every entry.
func listUploadsAll(t *testing.T, o *Origin, opts store.UploadListOptions) []string {
	t.Helper()
	var all []string
	for pages := 0; pages < 50; pages++ {
		p, err := o.ListUploads(t.Context(), "bucket", opts)
		if err != nil {
			t.Fatalf("ListUploads(%+v): %v", opts, err)
		}
		var got []string
		for _, u := range p.Uploads {
			got = append(got, u.Key+"#"+u.UploadID)
		}
		for _, cp := range p.CommonPrefixes {
			got = append(got, cp+"(prefix)")
		}
		if opts.MaxUploads > 0 && len(got) > opts.MaxUploads {
			t.Fatalf("ListUploads(%+v) returned %d entries", opts, len(got))
		}
		slices.SortStableFunc(got, func(a, b string) int {
			return strings.Compare(strings.TrimSuffix(strings.Split(a, "#")[0], "(prefix)"), strings.TrimSuffix(strings.Split(b, "#")[0], "(prefix)"))
		})
		all = append(all, got...)
		if !p.IsTruncated {
			return all
		}
		opts.KeyAfter, opts.UploadIDAfter = p.NextKeyAfter, p.NextUploadIDAfter
	}
	t.Fatalf("ListUploads(%+v): no end after 50 pages", opts)
	return nil
}

func TestListUploadsCompliantServer(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := &s3Uploads{}
	for i, name := range []string{"a/1#u1", "a/1#u2", "a/2#u3", "b#u4", "c/d/e#u5", "c/f#u6"} {
		key, id, _ := strings.Cut(name, "#")
		srv.uploads = append(srv.uploads, store.UploadInfo{Key: key, UploadID: id, Initiated: t0.Add(time.Duration(i) * time.Second)})
	}
	o := fakeOrigin(t, srv.serve)
	p, err := o.ListUploads(t.Context(), "bucket", store.UploadListOptions{})
	if err != nil || len(p.Uploads) != 6 || !p.Uploads[1].Initiated.Equal(t0.Add(time.Second)) || p.Uploads[1].UploadID != "u2" {
		t.Fatalf("ListUploads() = %+v, %v; want the 6 uploads with their initiation times", p, err)
	}
	for _, c := range []struct {
		prefix, delim string
		want          string
	}{
		{"", "", "a/1#u1 a/1#u2 a/2#u3 b#u4 c/d/e#u5 c/f#u6"},
		{"", "/", "a/(prefix) b#u4 c/(prefix)"},
		{"c/", "/", "c/d/(prefix) c/f#u6"},
		{"a/", "", "a/1#u1 a/1#u2 a/2#u3"},
		{"a/1", "", "a/1#u1 a/1#u2"},
	} {
		for _, max := range []int{0, 1, 2, 3} {
			srv.mu.Lock()
			srv.queries = nil
			srv.mu.Unlock()
			opts := store.UploadListOptions{Prefix: c.prefix, Delimiter: c.delim, MaxUploads: max}
			got := strings.Join(listUploadsAll(t, o, opts), " ")
			if got != c.want {
				t.Errorf("ListUploads(%+v) = %s, want %s", opts, got, c.want)
			}
			srv.mu.Lock()
			queries := srv.queries
			srv.mu.Unlock()
			n, pages := strings.Count(c.want, " ")+1, 1
			if max > 0 {
				pages = (n + max - 1) / max
			}
			if len(queries) != pages {
				t.Errorf("ListUploads(%+v) took %d requests for %d entries, want %d", opts, len(queries), n, pages)
			}
			for _, q := range queries {
				if km := q["key-marker"]; q["upload-id-marker"] == "" && strings.HasSuffix(km, "/") && c.delim == "/" {
					t.Errorf("ListUploads(%+v) sent key-marker %q: the server repeats that common prefix", opts, km)
				}
			}
		}
	}
}
