// goclient is the Go client scripts/warmrig.py reads with when asked
// (--client go): net/http with the reads scenario's tuning, each GET
// signed as loadtest signs it (minio-go's SigV4 signer) unless no key is
// given, readers going round the objects for a while. It prints the GETs
// it completed; a short body or a status other than 200 fails it. With
// -list each reader first lists the prefix, as a data loader that lists
// before it reads does, on a connection its GETs then reuse; with
// -presign each GET is a presigned URL's.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

type config struct {
	base           string // http://host:port/bucket/prefix: keys are base + %04d
	objects, size  int
	readers        int
	secs           time.Duration
	access, secret string
	list           bool // each reader lists the prefix first
	presign        bool // GETs signed in the query (presigned URLs) instead of the header
}

func main() {
	var c config
	flag.StringVar(&c.base, "base", "", "URL every key starts with: http://HOST:PORT/BUCKET/PREFIX (keys PREFIX0000 ...)")
	flag.IntVar(&c.objects, "objects", 1000, "objects under the prefix")
	flag.IntVar(&c.size, "size", 0, "each object's size in bytes")
	flag.IntVar(&c.readers, "readers", 16, "concurrent readers, each on its own connection")
	flag.DurationVar(&c.secs, "for", 4*time.Second, "how long to read")
	flag.StringVar(&c.access, "access", "", "access key (none: unsigned GETs)")
	flag.StringVar(&c.secret, "secret", "", "secret key")
	flag.BoolVar(&c.list, "list", false, "each reader lists the prefix (one page) before it reads")
	flag.BoolVar(&c.presign, "presign", false, "sign each GET as a presigned URL (SigV4, in the query) instead of in its header")
	flag.Parse()
	n, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// run reads as c says and returns the GETs done.
func run(c config) (int64, error) {
	tr := &http.Transport{
		MaxIdleConnsPerHost: c.readers, DisableCompression: true,
		ReadBufferSize: 256 << 10, WriteBufferSize: 16 << 10,
	}
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	var done, next atomic.Int64
	var mu sync.Mutex
	var first error
	end := time.Now().Add(c.secs)
	var wg sync.WaitGroup
	for range c.readers {
		wg.Go(func() {
			if c.list {
				if err := list(client, c); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
			for time.Now().Before(end) {
				url := fmt.Sprintf("%s%04d", c.base, next.Add(1)%int64(c.objects))
				if err := get(client, url, c); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load(), first
}

// list asks for a page of the keys under c.base's prefix (ListObjectsV2)
// and reads the answer.
func list(client *http.Client, c config) error {
	u, err := url.Parse(c.base)
	if err != nil {
		return err
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	u.Path, u.RawQuery = "/"+bucket, url.Values{"list-type": {"2"}, "prefix": {prefix}, "max-keys": {"100"}}.Encode()
	resp, err := do(client, u.String(), c)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list %s: status %d, %v", u, resp.StatusCode, err)
	}
	return nil
}

// do sends a GET of url, signed if c has a key.
func do(client *http.Client, url string, c config) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case c.access == "":
	case c.presign:
		req = signer.PreSignV4(*req, c.access, c.secret, "", "us-east-1", 3600)
	default:
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		req = signer.SignV4(*req, c.access, c.secret, "", "us-east-1")
	}
	return client.Do(req)
}

// get reads url whole and checks its status and length.
func get(client *http.Client, url string, c config) error {
	resp, err := do(client, url, c)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", url, err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	case n != int64(c.size):
		return fmt.Errorf("%s: %d bytes, want %d", url, n, c.size)
	}
	return nil
}
