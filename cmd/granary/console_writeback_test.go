// The console's write-back panel in a real browser: with the origin gone,
// a checkpoint written back waits in the log, and the panel shows it
// waiting, the dirty limit and the failed uploads; once the origin is
// back, the flush form uploads it and says so, and the backlog empties.
// The start banner names the console's URL.
package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
)

func TestConsoleWriteBack(t *testing.T) {
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "wb-admin", "GRANARY_SECRET_KEY": "wb-admin-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(),
	}
	s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--write-mode", "write-back",
		"--dirty-limit", "64MiB", "--ram", "64MiB", "--disk", "128MiB")
	if want := "console: http://" + s.addr + "/_granary/console/"; !strings.Contains(s.stderr.String(), want) {
		t.Fatalf("the start banner does not name the console (%q):\n%s", want, s.stderr.String())
	}
	cl := clientAs(t, s.addr, "wb-admin", "wb-admin-secret")
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	mio.Kill() // the origin is gone until Restart: the checkpoint waits
	body := bytes.Repeat([]byte("step 1000 "), 100<<10)
	if _, err := (minio.Core{Client: cl}).PutObject(ctx, "ckpt", "run/step-1000", bytes.NewReader(body), int64(len(body)), "", "", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	r := newConsoleRig(t, "http://"+s.addr, env)
	tab := r.tab()
	r.signIn(tab, "wb-admin", "wb-admin-secret", "")
	cell := func(k string) string {
		return `document.querySelector('#writeback tr[data-writeback="` + k + `"] td')`
	}
	r.do(tab, "the backlog shows", waitJS(`!document.getElementById('writeback-section').hidden && `+cell("dirty")+` !== null &&
		+`+cell("dirty")+`.dataset.value === `+fmt.Sprint(len(body))+` && +`+cell("limit")+`.dataset.value === 64 * 1048576 &&
		+`+cell("uploads")+`.dataset.value > 0`))
	r.shot(tab, "writeback")
	if text := eval[string](r, tab, cell("dirty")+`.textContent`); !strings.HasPrefix(text, "1 object, 1000.0 KiB") {
		t.Fatalf("the backlog reads %q", text)
	}
	if err := mio.Restart(); err != nil {
		t.Fatal(err)
	}
	// Up, and answering for the bucket: a MinIO just restarted may list
	// its buckets before it answers a HEAD of one (503 while it starts).
	eventually(t, "the node sees its origin up", func() error {
		if o := r.status().Origin; o == nil || o.State != store.HealthUp {
			return fmt.Errorf("origin: %+v", o)
		}
		if ok, err := cl.BucketExists(ctx, "ckpt"); !ok || err != nil {
			return fmt.Errorf("HEAD of the bucket: %v, %v", ok, err)
		}
		return nil
	})
	r.do(tab, "flushing the checkpoint",
		setField("flush-bucket", "ckpt"), setField("flush-prefix", "run/"),
		chromedp.Click(`#flush-form button[type="submit"]`),
		waitJS(`document.getElementById('flush-result').dataset.done === 'true'`),
		waitJS(`+`+cell("dirty")+`.dataset.value === 0`))
	r.shot(tab, "writeback-flushed")
	if text := eval[string](r, tab, `document.getElementById('flush-result').textContent`); !strings.HasPrefix(text, "Flushed: ") {
		t.Fatalf("the flush reads %q", text)
	}
	if got := getAll(t, directClient(t, mio), "ckpt", "run/step-1000"); !bytes.Equal(got, body) {
		t.Fatal("the checkpoint differs at the origin")
	}
}
