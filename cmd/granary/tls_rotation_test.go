// A certificate rotated again and again while clients read without pause:
// no request fails, whether it rides an open connection or opens one
// during the rotation (the two files are replaced one after the other, so
// handshakes also meet a new certificate beside the old key).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestRotationUnderLoad(t *testing.T) {
	n, f, cl := startTLSChild(t)
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "rot", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(11, 256<<10)
	if _, err := cl.PutObject(ctx, "rot", "obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	url, err := cl.PresignedGetObject(ctx, "rot", "obj", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var served, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range 8 {
		// Half keep their connections; half open one per request, so
		// handshakes run while the files change.
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, DisableKeepAlives: i%2 == 1}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr, Timeout: time.Minute}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := readWhole(hc, url.String(), data); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				served.Add(1)
			}
		}()
	}
	fresh := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, DisableKeepAlives: true}
	const rotations = 10
	for range rotations {
		want := f.ca.Leaf(t, f.cert, f.key).String()
		before := served.Load()
		eventually(t, "the new certificate served", func() error {
			if got := httpsGet(t, fresh, "https://"+n.addr+"/healthz"); got != want {
				return fmt.Errorf("certificate %s, want %s", got, want)
			}
			if served.Load() == before {
				return fmt.Errorf("no read finished since the rotation")
			}
			return nil
		})
	}
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d reads failed across %d rotations; first: %v", failed.Load(), failed.Load()+served.Load(), rotations, firstErr.Load())
	}
	t.Logf("%d reads, none failed, across %d rotations", served.Load(), rotations)
}

// readWhole GETs url and checks the body is want.
func readWhole(hc *http.Client, url string, want []byte) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d: %s", resp.StatusCode, got)
	case !bytes.Equal(got, want):
		return fmt.Errorf("%d bytes that differ from the object's", len(got))
	}
	return nil
}
