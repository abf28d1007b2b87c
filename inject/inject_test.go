// Tests of the injection: the example training Job without its sidecar,
// labelled and annotated, comes out as the example Job with it (so the
// webhook and the manifest are one sidecar); a review through the HTTP
// handler returns a patch that does the same; unlabelled pods pass
// untouched and a labelled pod without a user is refused.
package inject

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// examplePods returns the example Job's pod, and the same pod as a user
// would write it for the webhook: no sidecar, no volumes of the mount, a
// label and two annotations.
func examplePods(t *testing.T) (want, asked corev1.Pod) {
	t.Helper()
	b, err := os.ReadFile("../deploy/kubernetes/examples/training-job/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatal(err)
	}
	want = corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	asked = *want.DeepCopy()
	asked.Spec.InitContainers = slices.DeleteFunc(asked.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == SidecarName })
	asked.Spec.Volumes = slices.DeleteFunc(asked.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == dataVolume || v.Name == keyVolume })
	for i := range asked.Spec.Containers {
		c := &asked.Spec.Containers[i]
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == dataVolume })
	}
	asked.Spec.TerminationGracePeriodSeconds = nil
	asked.Labels = map[string]string{LabelMount: "datasets"}
	asked.Annotations = map[string]string{AnnotationPrefix: "imagenet/train", AnnotationUser: "train-resnet"}
	want.Labels, want.Annotations = asked.Labels, asked.Annotations
	return want, asked
}

// sorted orders what Kubernetes keeps unordered: volumes and mounts by
// name.
func sorted(spec corev1.PodSpec) corev1.PodSpec {
	s := *spec.DeepCopy()
	slices.SortFunc(s.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
	for i := range s.Containers {
		slices.SortFunc(s.Containers[i].VolumeMounts, func(a, b corev1.VolumeMount) int { return strings.Compare(a.Name, b.Name) })
	}
	return s
}

func TestPodIsTheExample(t *testing.T) {
	want, pod := examplePods(t)
	changed, err := Pod(&pod, Options{Endpoint: "http://granary:9000"})
	if err != nil || !changed {
		t.Fatalf("Pod: %v, %v", changed, err)
	}
	if got, w := sorted(pod.Spec), sorted(want.Spec); !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", " ")
		e, _ := json.MarshalIndent(w, "", " ")
		t.Fatalf("injected pod differs from the example Job's:\n%s\nwant:\n%s", g, e)
	}
	again := *pod.DeepCopy()
	if changed, err := Pod(&again, Options{}); changed || err != nil || !reflect.DeepEqual(again, pod) {
		t.Errorf("a second injection changed the pod (%v, %v)", changed, err)
	}
}

func TestPodAsksWrong(t *testing.T) {
	_, pod := examplePods(t)
	delete(pod.Annotations, AnnotationUser)
	if _, err := Pod(&pod, Options{}); err != ErrNoUser {
		t.Errorf("no user: %v, want ErrNoUser", err)
	}
	_, pod = examplePods(t)
	pod.Annotations[AnnotationPath] = "relative/dir"
	if _, err := Pod(&pod, Options{}); err == nil {
		t.Error("a relative mount path: no error")
	}
	_, pod = examplePods(t)
	delete(pod.Labels, LabelMount)
	if changed, err := Pod(&pod, Options{}); changed || err != nil {
		t.Errorf("an unlabelled pod: %v, %v", changed, err)
	}
}

// review posts a review of pod to the handler.
func review(t *testing.T, h http.Handler, pod corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	in := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: "u-1", Object: runtime.RawExtension{Raw: raw}}}
	in.APIVersion, in.Kind = "admission.k8s.io/v1", "AdmissionReview"
	body, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != "u-1" {
		t.Fatalf("answer %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
		t.Errorf("answer is %s %s", out.APIVersion, out.Kind)
	}
	return out.Response
}

func TestHandler(t *testing.T) {
	h := Handler(Options{})
	want, pod := examplePods(t)
	resp := review(t, h, pod)
	if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("labelled pod: %+v", resp)
	}
	var patch []struct {
		Op, Path string
		Value    corev1.PodSpec
	}
	if err := json.Unmarshal(resp.Patch, &patch); err != nil || len(patch) != 1 || patch[0].Op != "replace" || patch[0].Path != "/spec" {
		t.Fatalf("patch %s: %v", resp.Patch, err)
	}
	if !reflect.DeepEqual(sorted(patch[0].Value), sorted(want.Spec)) {
		t.Error("the patched spec is not the example's")
	}

	delete(pod.Labels, LabelMount)
	if resp := review(t, h, pod); !resp.Allowed || resp.Patch != nil {
		t.Errorf("unlabelled pod: %+v", resp)
	}
	_, pod = examplePods(t)
	delete(pod.Annotations, AnnotationUser)
	if resp := review(t, h, pod); resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, AnnotationUser) {
		t.Errorf("pod without a user: %+v", resp)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate", strings.NewReader("{")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("garbage: %d", rec.Code)
	}
}
