// The training Job example, checked as Kubernetes would run it: the mount
// sidecar's privileges, device and propagation, then for real: a node of
// the cache tier (the base's StatefulSet container, in front of a real
// MinIO), the sidecar's own args mounting through the kernel's FUSE, its
// startup probe, the trainer's user reading the mounted files, and a
// checkpoint written with the trainer's S3 settings reaching the origin.
package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"

	"github.com/granary-dev/granary/internal/miniotest"
)

// sidecarOf returns the Job's mount sidecar and its trainer.
func sidecarOf(t *testing.T, w workload) (side, trainer corev1.Container) {
	t.Helper()
	for _, c := range w.pod.InitContainers {
		if granaryArgs(c) == "mount" {
			side = c
		}
	}
	if side.Name == "" || len(w.pod.Containers) != 1 {
		t.Fatalf("%s: want a granary mount init container and one trainer", w)
	}
	return side, w.pod.Containers[0]
}

// checkSidecar: a native sidecar, privileged (Kubernetes refuses
// Bidirectional propagation otherwise; that also gives it /dev/fuse and
// SYS_ADMIN), whose
// mountpoint is a volume it shares Bidirectionally and the trainer sees
// HostToContainer; allow_other and the trainer's uid when the trainer
// runs as someone else; a startup probe, so the trainer starts after the
// mount.
func checkSidecar(t *testing.T, w workload, side, trainer corev1.Container) {
	t.Helper()
	if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("sidecar: not a native sidecar (restartPolicy: Always)")
	}
	sc := side.SecurityContext
	if sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Error("sidecar: want privileged (Kubernetes allows Bidirectional propagation only there)")
	}
	mountpoint := side.Args[len(side.Args)-1]
	var shared bool
	vol := ""
	for _, m := range side.VolumeMounts {
		if m.MountPath == mountpoint && m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
			vol = m.Name
		}
	}
	for _, v := range w.pod.Volumes {
		shared = shared || (v.Name == vol && v.EmptyDir != nil)
	}
	if !shared {
		t.Errorf("sidecar: mountpoint %s is not an emptyDir mounted with Bidirectional propagation", mountpoint)
	}
	seen := false
	for _, m := range trainer.VolumeMounts {
		if m.Name == vol {
			seen = m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationHostToContainer
		}
	}
	if !seen {
		t.Error("trainer: does not mount the sidecar's volume with HostToContainer propagation")
	}
	uid := trainer.SecurityContext.RunAsUser
	if uid == nil || *uid == 0 {
		t.Fatal("trainer: want it to run as a user other than root")
	}
	if !slices.Contains(side.Args, "--allow-other") || !slices.Contains(side.Args, "--uid="+strconv.FormatInt(*uid, 10)) {
		t.Errorf("sidecar: want --allow-other and --uid=%d for the trainer's user", *uid)
	}
	if side.StartupProbe == nil || side.StartupProbe.Exec == nil {
		t.Error("sidecar: no startup probe: the trainer could start before the mount")
	}
}

// TestKubernetesTrainingJob runs the example's sidecar against a node of
// the base cache tier.
func TestKubernetesTrainingJob(t *testing.T) {
	o := render(t, "base", "examples/training-job")
	var job, tier workload
	for _, w := range o.workloads() {
		switch w.kind {
		case "Job":
			job = w
		case "StatefulSet":
			tier = w
		}
	}
	side, trainer := sidecarOf(t, job)
	checkSidecar(t, job, side, trainer)
	checkSidecarStop(t, job, side)
	checkTrainerImage(t, trainer)
	checkScopedKeys(t, job)
	checkScript(t, o, job)

	origin := miniotest.StartT(t)
	mc := s3Client(t, origin.Endpoint, origin.AccessKey, origin.SecretKey)
	ctx := context.Background()
	for _, b := range []string{"datasets", "checkpoints"} {
		if err := mc.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sample := bytes.Repeat([]byte("granary sample "), 700)
	if _, err := mc.PutObject(ctx, "datasets", "imagenet/train/n01440764/img-0001.JPEG", bytes.NewReader(sample),
		int64(len(sample)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	os.Chmod(filepath.Dir(root), 0o755) // the trainer's user walks down to the mount
	os.Chmod(root, 0o755)
	node := startTier(t, o, tier, filepath.Join(root, "tier"), origin)
	pod := filepath.Join(root, "pod")
	sc := resolve(t, o, job, side, pod)
	tc := resolve(t, o, job, trainer, pod)
	endpoint := "http://" + o.services["granary"].Name + ":9000"
	if !slices.Contains(sc.args, "--endpoint="+endpoint) || tc.env["AWS_ENDPOINT_URL"] != endpoint {
		t.Fatalf("the sidecar and the trainer must reach the client Service at %s", endpoint)
	}
	for i, a := range sc.args {
		sc.args[i] = strings.Replace(a, endpoint, node.url, 1)
	}
	mountSidecar(t, sc)

	// The trainer's user reads the mounted file.
	dataDir := tc.env["DATA_DIR"]
	cat := exec.Command("cat", filepath.Join(dataDir, "n01440764/img-0001.JPEG"))
	uid, gid := *trainer.SecurityContext.RunAsUser, *trainer.SecurityContext.RunAsGroup
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	got, err := cat.Output()
	if err != nil || !bytes.Equal(got, sample) {
		t.Fatalf("the trainer (uid %d) reading the mount: %v, %d bytes of %d", uid, err, len(got), len(sample))
	}

	// A checkpoint written as the trainer writes it reaches the origin.
	tm := s3Client(t, strings.TrimPrefix(node.url, "http://"), tc.env["AWS_ACCESS_KEY_ID"], tc.env["AWS_SECRET_ACCESS_KEY"])
	checkKeyScope(t, tm, tc.env["CHECKPOINT_BUCKET"])
	key := tc.env["CHECKPOINT_PREFIX"] + "epoch-0000.pt"
	ckpt := bytes.Repeat([]byte{7}, 3<<20)
	if _, err := tm.PutObject(ctx, tc.env["CHECKPOINT_BUCKET"], key, bytes.NewReader(ckpt), int64(len(ckpt)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("checkpoint through the node: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := mc.StatObject(ctx, tc.env["CHECKPOINT_BUCKET"], key, minio.StatObjectOptions{})
		if err == nil && st.Size == int64(len(ckpt)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint not at the origin a minute after it was written: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startTier runs the cache tier's container as a node of one in front of
// origin (its address and keys replacing the example origin's).
func startTier(t *testing.T, o *objects, w workload, root string, origin *miniotest.Server) *served {
	t.Helper()
	var c corev1.Container
	for _, cc := range w.pod.Containers {
		if granaryArgs(cc) == "serve" {
			c = cc
		}
	}
	rc := resolve(t, o, w, c, root)
	keys := filepath.Join(root, "origin-keys")
	os.MkdirAll(keys, 0o700)
	os.WriteFile(filepath.Join(keys, "ak"), []byte(origin.AccessKey), 0o600)
	os.WriteFile(filepath.Join(keys, "sk"), []byte(origin.SecretKey), 0o600)
	rc.env["GRANARY_ORIGIN_ACCESS_KEY_FILE"] = filepath.Join(keys, "ak")
	rc.env["GRANARY_ORIGIN_SECRET_KEY_FILE"] = filepath.Join(keys, "sk")
	args := append(append([]string{}, rc.args...), "--listen=127.0.0.1:0", "--gossip-bind=127.0.0.1:0", "--join=",
		"--origin=s3://"+origin.Endpoint+"?secure=false")
	return serve(t, args, rc.env)
}

// mountSidecar starts the sidecar's command and waits until its startup
// probe, run here, succeeds; it is stopped (and unmounted) at the end.
func mountSidecar(t *testing.T, sc *container) {
	t.Helper()
	cmd := exec.Command(granaryBin, sc.args...)
	cmd.Env = environ(sc.env)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	probe := sc.spec.StartupProbe.Exec.Command
	for i := range probe {
		probe[i] = sc.rewrite(probe[i])
	}
	deadline := time.Now().Add(time.Minute)
	for exec.Command(probe[0], probe[1:]...).Run() != nil {
		select {
		case err := <-done:
			t.Fatalf("mount sidecar %q exited: %v\n%s", sc.args, err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("startup probe %q still failing after a minute\n%s", probe, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkScript compiles the trainer's script, from the ConfigMap the Job
// mounts (no PyTorch here to run it).
func checkScript(t *testing.T, o *objects, job workload) {
	t.Helper()
	var cm *corev1.ConfigMap
	for _, v := range job.pod.Volumes {
		if v.Name == "script" && v.ConfigMap != nil {
			cm = o.configMaps[v.ConfigMap.Name]
		}
	}
	if cm == nil {
		t.Fatal("the Job mounts no train-script ConfigMap")
	}
	path := filepath.Join(t.TempDir(), "train.py")
	os.WriteFile(path, []byte(cm.Data["train.py"]), 0o644)
	if out, err := exec.Command("python3", "-m", "py_compile", path).CombinedOutput(); err != nil {
		t.Fatalf("train.py: %v\n%s", err, out)
	}
}

func s3Client(t *testing.T, endpoint, ak, sk string) *minio.Client {
	t.Helper()
	c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
