// Package inject adds the `granary mount` sidecar to Kubernetes pods that
// ask for it with a label: the mutation behind `granary inject`, a
// mutating admission webhook, so a training Job needs one label and two
// annotations instead of a pasted sidecar. The sidecar it adds is the one
// deploy/kubernetes/examples/training-job/job.yaml spells out (a test
// holds them equal).
package inject

import (
	"errors"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// What a pod says to get a mount.
const (
	// LabelMount names the bucket to mount; the webhook sees only pods
	// that carry it (its objectSelector).
	LabelMount = "granary.dev/mount"
	// AnnotationPrefix is the prefix of the bucket to mount ("": all).
	AnnotationPrefix = "granary.dev/prefix"
	// AnnotationPath is where the containers see the files (default
	// DefaultPath).
	AnnotationPath = "granary.dev/mount-path"
	// AnnotationUser is the access key the mount signs with: a user of
	// the nodes' configuration whose secret is the key of that name in
	// the users Secret. Required: a pod never gets the nodes' own key.
	AnnotationUser = "granary.dev/user"
)

// Defaults of Options' zero values and of a pod's annotations.
const (
	DefaultPath        = "/mnt/data"
	DefaultEndpoint    = "http://granary:9000"
	DefaultImage       = "granary"
	DefaultUsersSecret = "granary-users"
	// SidecarName is the init container the webhook adds; a pod that
	// has one already is left as it is.
	SidecarName = "granary-mount"
	// GracePeriod outlasts the mount's own wait for its session to end
	// (45 s, fuse/mount.go), so the sidecar's preStop and SIGTERM finish
	// before the kubelet kills it.
	GracePeriod = 75
)

// Options is what every injected sidecar shares.
type Options struct {
	Image       string // the granary image (DefaultImage)
	Endpoint    string // the Granary Service the mount reads through (DefaultEndpoint)
	UsersSecret string // the Secret holding the users' secrets (DefaultUsersSecret)
}

func (o Options) normalize() Options {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	if o.UsersSecret == "" {
		o.UsersSecret = DefaultUsersSecret
	}
	return o
}

// The pod's volumes the sidecar brings.
const (
	dataVolume = "data"
	keyVolume  = "user-key"
	keyDir     = "/etc/granary/user"
)

// mount is one pod's request.
type mount struct {
	bucket, prefix, path, user string
	uid, gid                   *int64
}

// ErrNoUser means a labelled pod names no user to sign with.
var ErrNoUser = errors.New("inject: the pod names no " + AnnotationUser)

// mountOf reads pod's request; ok is false for a pod without the label
// or with a sidecar already.
func mountOf(pod *corev1.Pod) (m mount, ok bool, err error) {
	bucket := pod.Labels[LabelMount]
	if bucket == "" {
		return m, false, nil
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == SidecarName {
			return m, false, nil
		}
	}
	m = mount{bucket: bucket, prefix: pod.Annotations[AnnotationPrefix], path: pod.Annotations[AnnotationPath],
		user: pod.Annotations[AnnotationUser]}
	if m.path == "" {
		m.path = DefaultPath
	}
	if m.user == "" {
		return m, false, ErrNoUser
	}
	if !path.IsAbs(m.path) || path.Clean(m.path) != m.path {
		return m, false, fmt.Errorf("inject: %s %q is not a clean absolute path", AnnotationPath, m.path)
	}
	m.uid, m.gid = podUser(pod.Spec)
	return m, true, nil
}

// podUser is the user and group the pod's first container runs as: the
// files of the mount are theirs.
func podUser(spec corev1.PodSpec) (uid, gid *int64) {
	if psc := spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if len(spec.Containers) > 0 {
		if sc := spec.Containers[0].SecurityContext; sc != nil {
			if sc.RunAsUser != nil {
				uid = sc.RunAsUser
			}
			if sc.RunAsGroup != nil {
				gid = sc.RunAsGroup
			}
		}
	}
	return uid, gid
}

// Pod adds the sidecar to pod if its labels ask for one: the sidecar, its
// volumes, the mount in every container (read-only, HostToContainer) and
// a grace period long enough for the unmount. It reports whether it
// changed pod.
func Pod(pod *corev1.Pod, o Options) (bool, error) {
	m, ok, err := mountOf(pod)
	if !ok || err != nil {
		return false, err
	}
	o = o.normalize()
	spec := &pod.Spec
	spec.InitContainers = append([]corev1.Container{sidecar(m, o)}, spec.InitContainers...)
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: keyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: o.UsersSecret, Items: []corev1.KeyToPath{{Key: m.user, Path: "secret-key"}}, DefaultMode: ptr(int32(0o400))}}})
	toContainer := corev1.MountPropagationHostToContainer
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{
			Name: dataVolume, MountPath: m.path, MountPropagation: &toContainer, ReadOnly: true})
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < GracePeriod {
		spec.TerminationGracePeriodSeconds = ptr(int64(GracePeriod))
	}
	return true, nil
}

// sidecar is the mount's native sidecar: privileged, since Kubernetes
// allows Bidirectional propagation only there (which also gives it
// /dev/fuse and SYS_ADMIN); probed for the mount at start and while it
// runs; unmounting in a preStop.
func sidecar(m mount, o Options) corev1.Container {
	args := []string{"mount", "--endpoint=" + o.Endpoint}
	if m.prefix != "" {
		args = append(args, "--prefix="+m.prefix)
	}
	args = append(args, "--read-only", "--allow-other")
	if m.uid != nil {
		args = append(args, "--uid="+strconv.FormatInt(*m.uid, 10))
	}
	if m.gid != nil {
		args = append(args, "--gid="+strconv.FormatInt(*m.gid, 10))
	}
	args = append(args, "--metadata-ttl=1h", "--max-memory=512MiB", "--supervise", m.bucket, m.path)
	always := corev1.ContainerRestartPolicyAlways
	bidirectional := corev1.MountPropagationBidirectional
	probe := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"mountpoint", "-q", m.path}}}
	mem := resource.MustParse("2560Mi")
	return corev1.Container{
		Name: SidecarName, Image: o.Image, RestartPolicy: &always, Args: args,
		Env: []corev1.EnvVar{{Name: "GRANARY_ACCESS_KEY", Value: m.user},
			{Name: "GRANARY_SECRET_KEY_FILE", Value: keyDir + "/secret-key"},
			{Name: "GOMEMLIMIT", Value: "2300MiB"}},
		SecurityContext: &corev1.SecurityContext{Privileged: ptr(true), RunAsUser: ptr(int64(0))},
		StartupProbe:    &corev1.Probe{ProbeHandler: probe, PeriodSeconds: 1, FailureThreshold: 120},
		LivenessProbe:   &corev1.Probe{ProbeHandler: probe, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 6},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"fusermount3", "-u", "-z", m.path}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem}},
		VolumeMounts: []corev1.VolumeMount{{Name: dataVolume, MountPath: m.path, MountPropagation: &bidirectional},
			{Name: keyVolume, MountPath: keyDir, ReadOnly: true}},
	}
}

func ptr[T any](v T) *T { return &v }
