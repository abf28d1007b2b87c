// A container as the kubelet would start it, on this machine: its
// environment resolved (values, fieldRefs, resourceFieldRefs, Secret and
// ConfigMap keys, $(VAR) references), its volumes made under a temporary root (ConfigMap
// and Secret keys written as files), and every path under a mount
// rewritten to that root, so its args can be run by a real granary.
package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fieldValues stand in for what the downward API would give a pod.
var fieldValues = map[string]string{
	"metadata.name":      "granary-0",
	"metadata.namespace": "granary",
	"status.podIP":       "10.1.2.3",
	"status.hostIP":      "10.0.0.5",
	"spec.nodeName":      "gpu-node-1",
}

// container is a resolved container of a workload.
type container struct {
	spec corev1.Container
	args []string          // command and args, expanded and rewritten
	env  map[string]string // expanded and rewritten
	// mounts maps each mount path to where its volume is on this machine.
	mounts map[string]string
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) by env's value, leaving unknown references as
// they are, as the kubelet does.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// resolve prepares c of w, with its volumes under root (shared by the
// containers of one pod, as a pod's volumes are).
func resolve(t *testing.T, o *objects, w workload, c corev1.Container, root string) *container {
	t.Helper()
	rc := &container{spec: c, env: map[string]string{}, mounts: map[string]string{}}
	for _, m := range c.VolumeMounts {
		rc.mounts[m.MountPath] = materialize(t, o, w, m.Name, root)
	}
	for _, e := range c.Env {
		v, err := envValue(o, w, c, e)
		if err != nil {
			t.Fatalf("%s container %s: env %s: %v", w, c.Name, e.Name, err)
		}
		rc.env[e.Name] = rc.rewrite(expand(v, rc.env))
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		rc.args = append(rc.args, rc.rewrite(expand(a, rc.env)))
	}
	return rc
}

// envValue is one variable's value before expansion, in container c.
func envValue(o *objects, w workload, c corev1.Container, e corev1.EnvVar) (string, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return e.Value, nil
	case src.FieldRef != nil:
		v, ok := fieldValues[src.FieldRef.FieldPath]
		if !ok {
			return "", fmt.Errorf("fieldRef %s is not one the tests know", src.FieldRef.FieldPath)
		}
		return v, nil
	case src.ResourceFieldRef != nil:
		return resourceValue(w, c, src.ResourceFieldRef)
	case src.SecretKeyRef != nil:
		s, ok := o.secrets[src.SecretKeyRef.Name]
		if !ok {
			return "", fmt.Errorf("Secret %s does not exist", src.SecretKeyRef.Name)
		}
		v, ok := s.Data[src.SecretKeyRef.Key]
		if !ok {
			return "", fmt.Errorf("Secret %s has no key %s", src.SecretKeyRef.Name, src.SecretKeyRef.Key)
		}
		return string(v), nil
	case src.ConfigMapKeyRef != nil:
		cm, ok := o.configMaps[src.ConfigMapKeyRef.Name]
		if !ok {
			return "", fmt.Errorf("ConfigMap %s does not exist", src.ConfigMapKeyRef.Name)
		}
		v, ok := cm.Data[src.ConfigMapKeyRef.Key]
		if !ok {
			return "", fmt.Errorf("ConfigMap %s has no key %s", src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key)
		}
		return v, nil
	}
	return "", fmt.Errorf("a source the tests do not know: %+v", src)
}

// resourceValue is a resourceFieldRef's value as the kubelet gives it: the
// named container's (c's without a name) request or limit, divided by the
// divisor and rounded up. A resource the container does not set fails.
func resourceValue(w workload, c corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		found := false
		for _, other := range containers(w.pod) {
			if other.Name == ref.ContainerName {
				c, found = other, true
			}
		}
		if !found {
			return "", fmt.Errorf("resourceFieldRef names container %s, which the pod lacks", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	list := map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits}[kind]
	q, set := list[corev1.ResourceName(name)]
	if !ok || !set {
		return "", fmt.Errorf("resourceFieldRef %s: container %s sets none", ref.Resource, c.Name)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	n := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
	return strconv.FormatInt(n, 10), nil
}

// rewrite maps paths under the container's mounts onto this machine,
// longest mount path first.
func (rc *container) rewrite(s string) string {
	paths := make([]string, 0, len(rc.mounts))
	for p := range rc.mounts {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		if s == p || strings.HasPrefix(s, p+"/") {
			return rc.mounts[p] + s[len(p):]
		}
		// a flag's value: --name=/path
		if i := strings.Index(s, "="+p); i >= 0 && (len(s) == i+1+len(p) || s[i+1+len(p)] == '/') {
			return s[:i+1] + rc.mounts[p] + s[i+1+len(p):]
		}
	}
	return s
}

// materialize makes volume name of w under root (once per pod) and
// returns its directory. A volume the pod does not have, or whose
// ConfigMap, Secret or key does not exist, fails the test.
func materialize(t *testing.T, o *objects, w workload, name, root string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	write := func(files map[string][]byte, items []corev1.KeyToPath, what string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if len(items) > 0 {
			picked := map[string][]byte{}
			for _, it := range items {
				v, ok := files[it.Key]
				if !ok {
					t.Fatalf("%s volume %s: %s has no key %s", w, name, what, it.Key)
				}
				picked[it.Path] = v
			}
			files = picked
		}
		for k, v := range files {
			if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, ok := w.claims[name]; ok {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, v := range w.pod.Volumes {
		if v.Name != name {
			continue
		}
		switch {
		case v.ConfigMap != nil:
			cm, ok := o.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("%s volume %s: ConfigMap %s does not exist", w, name, v.ConfigMap.Name)
			}
			files := map[string][]byte{}
			for k, s := range cm.Data {
				files[k] = []byte(s)
			}
			write(files, v.ConfigMap.Items, "ConfigMap "+cm.Name)
		case v.Secret != nil:
			s, ok := o.secrets[v.Secret.SecretName]
			if !ok {
				t.Fatalf("%s volume %s: Secret %s does not exist", w, name, v.Secret.SecretName)
			}
			write(s.Data, v.Secret.Items, "Secret "+s.Name)
		case v.EmptyDir != nil, v.HostPath != nil && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectoryOrCreate,
			v.PersistentVolumeClaim != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		case v.HostPath != nil:
			return v.HostPath.Path // a device or a file of the node: this machine's own
		default:
			t.Fatalf("%s volume %s: a kind of volume the tests do not know", w, name)
		}
		return dir
	}
	t.Fatalf("%s: a volume mount names %s, which is neither a volume nor a claim template", w, name)
	return ""
}
