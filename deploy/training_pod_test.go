// Tests of how the training Job's pod stops and what it holds: the
// sidecar unmounts in a preStop and is probed for liveness, the grace
// period outlasts the mount's own wait for its session to end (read from
// fuse/mount.go), the trainer's image carries its dependencies (no
// `pip install` at start-up), and the pod holds only the trainer's scoped
// key, which the node refuses beyond its grants.
package deploy

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
)

// mountServeWait reads fuse's serveWait, the longest an unmount waits
// for the session to end, from its source: a constant N * time.Second.
func mountServeWait(t *testing.T) time.Duration {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "fuse", "mount.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wait time.Duration
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "serveWait" || len(vs.Values) != 1 {
			return true
		}
		if be, ok := vs.Values[0].(*ast.BinaryExpr); ok && be.Op == token.MUL {
			lit, _ := be.X.(*ast.BasicLit)
			sel, _ := be.Y.(*ast.SelectorExpr)
			if lit != nil && sel != nil && sel.Sel.Name == "Second" {
				n, _ := strconv.Atoi(lit.Value)
				wait = time.Duration(n) * time.Second
			}
		}
		return false
	})
	if wait == 0 {
		t.Fatal("fuse/mount.go: no serveWait = N * time.Second")
	}
	return wait
}

// checkSidecarStop: a preStop that unmounts the mountpoint, a liveness
// probe, and a grace period longer than the mount's own wait.
func checkSidecarStop(t *testing.T, w workload, side corev1.Container) {
	t.Helper()
	mountpoint := side.Args[len(side.Args)-1]
	if l := side.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Exec == nil ||
		!slices.Contains(l.PreStop.Exec.Command, "-u") || !slices.Contains(l.PreStop.Exec.Command, mountpoint) {
		t.Errorf("sidecar: want a preStop that unmounts %s", mountpoint)
	}
	if p := side.LivenessProbe; p == nil || p.Exec == nil || !slices.Contains(p.Exec.Command, mountpoint) {
		t.Errorf("sidecar: want a liveness probe of %s", mountpoint)
	}
	wait := mountServeWait(t)
	grace := time.Duration(30) * time.Second // Kubernetes' default
	if g := w.pod.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace <= wait {
		t.Errorf("grace period %v, not longer than the mount's unmount wait %v", grace, wait)
	}
}

// checkTrainerImage: the trainer installs nothing when it starts; its
// image is built from Dockerfile.trainer, which installs what train.py
// imports beyond PyTorch.
func checkTrainerImage(t *testing.T, trainer corev1.Container) {
	t.Helper()
	cmd := strings.Join(append(append([]string{}, trainer.Command...), trainer.Args...), " ")
	if strings.Contains(cmd, "pip ") {
		t.Errorf("trainer: installs packages at start-up: %s", cmd)
	}
	if !strings.HasPrefix(trainer.Image, "granary-trainer") {
		t.Errorf("trainer: image %s, want the one Dockerfile.trainer builds (granary-trainer)", trainer.Image)
	}
	dir := filepath.Join("kubernetes", "examples", "training-job")
	docker, err := os.ReadFile(filepath.Join(dir, "Dockerfile.trainer"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(dir, "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	imports := regexp.MustCompile(`(?m)^(?:import|from) ([a-z0-9_]+)`)
	for _, m := range imports.FindAllSubmatch(script, -1) {
		mod := string(m[1])
		if mod == "torch" || isStdlib(mod) {
			continue
		}
		if !regexp.MustCompile(`pip install[^\n]*\b` + mod + `\b`).Match(docker) {
			t.Errorf("Dockerfile.trainer does not install %s, which train.py imports", mod)
		}
	}
}

// isStdlib: the standard modules train.py may import.
func isStdlib(mod string) bool {
	return slices.Contains([]string{"io", "os", "sys", "time", "json", "math", "random", "pathlib", "argparse"}, mod)
}

// checkScopedKeys: nothing in the Job reads the nodes' own keys (the
// granary-keys Secret); its keys come from granary-users.
func checkScopedKeys(t *testing.T, w workload) {
	t.Helper()
	for _, v := range w.pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "granary-users" {
			t.Errorf("volume %s: Secret %s, want only granary-users", v.Name, v.Secret.SecretName)
		}
	}
	for _, c := range containers(w.pod) {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name != "granary-users" {
				t.Errorf("container %s: %s from Secret %s, want only granary-users", c.Name, e.Name, r.SecretKeyRef.Name)
			}
		}
	}
}

// checkKeyScope: the trainer's key may not write its data set, nor
// another run's checkpoints, nor read another bucket.
func checkKeyScope(t *testing.T, c *minio.Client, ckptBucket string) {
	t.Helper()
	ctx := context.Background()
	body := []byte("x")
	for _, at := range [][2]string{{"datasets", "imagenet/train/poison.JPEG"}, {ckptBucket, "other-run/epoch-0.pt"}} {
		_, err := c.PutObject(ctx, at[0], at[1], bytes.NewReader(body), 1, minio.PutObjectOptions{})
		if minio.ToErrorResponse(err).Code != "AccessDenied" {
			t.Errorf("the trainer's key writing s3://%s/%s: %v, want AccessDenied", at[0], at[1], err)
		}
	}
	if _, err := c.StatObject(ctx, "datasets", "other/thing", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Errorf("the trainer's key reading outside its data set: %v, want AccessDenied", err)
	}
}
