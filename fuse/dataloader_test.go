// A PyTorch-style data loader against a real mount: Python worker
// processes read every file of a listed tree in a shuffled order, two
// epochs, and check each file's sha256.
package fuse

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loaderScript lists the tree the way a Dataset's index does, then
// reads it with a multiprocessing pool as DataLoader workers do: each
// sample opened, measured with a seek to the end, read in two parts.
const loaderScript = `
import hashlib, json, os, random, sys
from multiprocessing import Pool

root = sys.argv[1]

def load(name):
    with open(os.path.join(root, name), "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        data = f.read(16) + f.read()
    return name, size, hashlib.sha256(data).hexdigest()

if __name__ == "__main__":
    manifest = json.load(open(sys.argv[2]))
    names = sorted(os.path.relpath(os.path.join(d, f), root)
                   for d, _, fs in os.walk(root) for f in fs)
    if names != sorted(manifest):
        sys.exit("listing differs: %d names, want %d" % (len(names), len(manifest)))
    for epoch in range(2):
        order = names[:]
        random.Random(epoch).shuffle(order)
        with Pool(4) as pool:
            for name, size, digest in pool.imap_unordered(load, order, chunksize=8):
                if digest != manifest[name]["sha256"] or size != manifest[name]["size"]:
                    sys.exit("epoch %d: %s: %d bytes, sha256 %s" % (epoch, name, size, digest))
    print("OK", len(names))
`

func TestDataLoaderWorkers(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	for _, ro := range []bool{true, false} {
		t.Run(fmt.Sprintf("read-only=%v", ro), func(t *testing.T) {
			mc, bucket := newBucket(t)
			objs := map[string][]byte{}
			type entry struct {
				Size   int    `json:"size"`
				SHA256 string `json:"sha256"`
			}
			manifest := map[string]entry{}
			for i := 0; i < 400; i++ {
				key := fmt.Sprintf("train/class%d/%04d.jpg", i%4, i)
				data := content(uint64(i), 1+(i*797)%(64<<10))
				objs[key] = data
				s := sum(data)
				manifest[strings.TrimPrefix(key, "train/")] = entry{Size: len(data), SHA256: hex.EncodeToString(s[:])}
			}
			putMany(t, mc, bucket, objs)
			mf := filepath.Join(t.TempDir(), "manifest.json")
			b, _ := json.Marshal(manifest)
			if err := os.WriteFile(mf, b, 0o644); err != nil {
				t.Fatal(err)
			}
			opts := baseOptions(bucket)
			opts.ReadOnly = ro
			dir, _ := mountT(t, opts)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, py, "-c", loaderScript, filepath.Join(dir, "train"), mf).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != fmt.Sprintf("OK %d", len(objs)) {
				t.Errorf("loader: %v\n%s", err, out)
			}
		})
	}
}
