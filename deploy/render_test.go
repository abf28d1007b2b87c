// Rendering the kustomizations with kubectl and decoding every object
// strictly into the Kubernetes API types: a field Kubernetes does not know
// (a misspelling, a wrong nesting) fails here rather than at apply time.
package deploy

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kinds maps each kind the manifests may hold to its API version and a
// new typed object; any other kind fails the test.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":           {"v1", func() any { return new(corev1.Namespace) }},
	"ConfigMap":           {"v1", func() any { return new(corev1.ConfigMap) }},
	"Secret":              {"v1", func() any { return new(corev1.Secret) }},
	"Service":             {"v1", func() any { return new(corev1.Service) }},
	"PersistentVolume":    {"v1", func() any { return new(corev1.PersistentVolume) }},
	"StatefulSet":         {"apps/v1", func() any { return new(appsv1.StatefulSet) }},
	"DaemonSet":           {"apps/v1", func() any { return new(appsv1.DaemonSet) }},
	"Job":                 {"batch/v1", func() any { return new(batchv1.Job) }},
	"PodDisruptionBudget": {"policy/v1", func() any { return new(policyv1.PodDisruptionBudget) }},
	"StorageClass":        {"storage.k8s.io/v1", func() any { return new(storagev1.StorageClass) }},
	// The Prometheus operator's, of the monitoring overlay.
	"ServiceMonitor": {"monitoring.coreos.com/v1", func() any { return new(monv1.ServiceMonitor) }},
	"PrometheusRule": {"monitoring.coreos.com/v1", func() any { return new(monv1.PrometheusRule) }},
	// The inject overlay's.
	"Deployment":                   {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"MutatingWebhookConfiguration": {"admissionregistration.k8s.io/v1", func() any { return new(admissionregv1.MutatingWebhookConfiguration) }},
}

// objects is one rendering, decoded, by kind.
type objects struct {
	all          []any
	namespaces   []*corev1.Namespace
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	pvs          []*corev1.PersistentVolume
	storage      map[string]*storagev1.StorageClass
	statefulSets []*appsv1.StatefulSet
	daemonSets   []*appsv1.DaemonSet
	jobs         []*batchv1.Job
	pdbs         []*policyv1.PodDisruptionBudget
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// render runs `kubectl kustomize` on each directory (relative to
// kubernetes/) and decodes the objects of all of them together.
func render(t *testing.T, dirs ...string) *objects {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to render the manifests (make deps installs it): %v", err)
	}
	o := &objects{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, storage: map[string]*storagev1.StorageClass{}}
	for _, dir := range dirs {
		var stderr bytes.Buffer
		cmd := exec.Command(kubectl, "kustomize", "kubernetes/"+dir)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
		}
		for _, doc := range docSep.Split(string(out), -1) {
			if len(bytes.TrimSpace([]byte(doc))) == 0 {
				continue
			}
			if err := o.add([]byte(doc)); err != nil {
				t.Fatalf("%s: %v\n%s", dir, err, doc)
			}
		}
	}
	return o
}

// add decodes one document strictly and files it.
func (o *objects) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	k, ok := kinds[tm.Kind]
	if !ok {
		return fmt.Errorf("kind %q is not one the tests know", tm.Kind)
	}
	if tm.APIVersion != k.apiVersion {
		return fmt.Errorf("%s: apiVersion %q, want %q", tm.Kind, tm.APIVersion, k.apiVersion)
	}
	obj := k.new()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", tm.Kind, err)
	}
	o.all = append(o.all, obj)
	switch v := obj.(type) {
	case *corev1.Namespace:
		o.namespaces = append(o.namespaces, v)
	case *corev1.ConfigMap:
		o.configMaps[v.Name] = v
	case *corev1.Secret:
		o.secrets[v.Name] = v
	case *corev1.Service:
		o.services[v.Name] = v
	case *corev1.PersistentVolume:
		o.pvs = append(o.pvs, v)
	case *storagev1.StorageClass:
		o.storage[v.Name] = v
	case *appsv1.StatefulSet:
		o.statefulSets = append(o.statefulSets, v)
	case *appsv1.DaemonSet:
		o.daemonSets = append(o.daemonSets, v)
	case *batchv1.Job:
		o.jobs = append(o.jobs, v)
	case *policyv1.PodDisruptionBudget:
		o.pdbs = append(o.pdbs, v)
	}
	return nil
}

// workload is a pod template with what owns it.
type workload struct {
	kind, name, namespace string
	labels, annotations   map[string]string
	pod                   corev1.PodSpec
	// claims are a StatefulSet's volumeClaimTemplates, by name.
	claims map[string]corev1.PersistentVolumeClaim
}

func (w workload) String() string { return w.kind + "/" + w.name }

// workloads returns every pod template of o.
func (o *objects) workloads() []workload {
	var ws []workload
	for _, s := range o.statefulSets {
		w := workload{kind: "StatefulSet", name: s.Name, namespace: s.Namespace, labels: s.Spec.Template.Labels,
			annotations: s.Spec.Template.Annotations, pod: s.Spec.Template.Spec, claims: map[string]corev1.PersistentVolumeClaim{}}
		for _, c := range s.Spec.VolumeClaimTemplates {
			w.claims[c.Name] = c
		}
		ws = append(ws, w)
	}
	for _, d := range o.daemonSets {
		ws = append(ws, workload{kind: "DaemonSet", name: d.Name, namespace: d.Namespace, labels: d.Spec.Template.Labels,
			annotations: d.Spec.Template.Annotations, pod: d.Spec.Template.Spec})
	}
	for _, j := range o.jobs {
		ws = append(ws, workload{kind: "Job", name: j.Name, namespace: j.Namespace, labels: j.Spec.Template.Labels,
			annotations: j.Spec.Template.Annotations, pod: j.Spec.Template.Spec})
	}
	return ws
}
