// Tests of the inject overlay (the mutating webhook that adds the mount
// sidecar): it decodes strictly, its Deployment meets Pod Security
// "restricted", the webhook configuration reaches the Service at a port
// the pods serve, asks only for labelled pods' creation, and the
// sidecar's image and endpoint are the Deployment's own image and the
// cache tier's client Service.
package deploy

import (
	"slices"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/granary-dev/granary/inject"
)

func TestInjectOverlay(t *testing.T) {
	o := render(t, "base", "overlays/inject")
	var dep *appsv1.Deployment
	var hook *admissionregv1.MutatingWebhookConfiguration
	for _, obj := range o.all {
		switch v := obj.(type) {
		case *appsv1.Deployment:
			dep = v
		case *admissionregv1.MutatingWebhookConfiguration:
			hook = v
		}
	}
	if dep == nil || hook == nil || len(hook.Webhooks) != 1 {
		t.Fatal("want a Deployment and a MutatingWebhookConfiguration of one webhook")
	}
	pod := dep.Spec.Template
	if v := restrictedViolations(pod.Spec, pod.Annotations); len(v) > 0 {
		t.Errorf("the webhook's pods are not at restricted: %q", v)
	}
	c := pod.Spec.Containers[0]
	if granaryArgs(c) != "inject" {
		t.Fatalf("container %s runs %q, want granary inject", c.Name, c.Args)
	}
	w := hook.Webhooks[0]
	svc, ok := o.services[w.ClientConfig.Service.Name]
	if !ok || w.ClientConfig.Service.Namespace != svc.Namespace || !selects(svc.Spec.Selector, pod.Labels) {
		t.Fatalf("the webhook calls Service %s/%s, which does not reach the Deployment", w.ClientConfig.Service.Namespace, w.ClientConfig.Service.Name)
	}
	checkService(t, svc, []workload{{kind: "Deployment", name: dep.Name, labels: pod.Labels, pod: pod.Spec}})
	if p := w.ClientConfig.Service.Port; p == nil || !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == *p }) {
		t.Errorf("the webhook calls port %v, which Service %s does not have", p, svc.Name)
	}
	checkWebhookScope(t, w)
	if want := "--image=" + c.Image; !slices.Contains(c.Args, want) {
		t.Errorf("the sidecar's image is not the webhook's own (%s): %q", want, c.Args)
	}
	tier := o.services["granary"]
	if want := "--endpoint=http://" + tier.Name + "." + tier.Namespace + ".svc:9000"; !slices.Contains(c.Args, want) {
		t.Errorf("the mounts do not read through the cache tier's Service (%s): %q", want, c.Args)
	}
}

// checkWebhookScope: the webhook sees only pods created with the mount
// label, speaks v1 reviews, has no side effects, and fails closed.
func checkWebhookScope(t *testing.T, w admissionregv1.MutatingWebhook) {
	t.Helper()
	sel := w.ObjectSelector
	if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != inject.LabelMount ||
		sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
		t.Errorf("objectSelector %+v, want %s Exists", sel, inject.LabelMount)
	}
	if len(w.Rules) != 1 || !slices.Equal(w.Rules[0].Resources, []string{"pods"}) ||
		!slices.Equal(w.Rules[0].Operations, []admissionregv1.OperationType{admissionregv1.Create}) {
		t.Errorf("rules %+v, want pod creation only", w.Rules)
	}
	if !slices.Contains(w.AdmissionReviewVersions, "v1") || w.SideEffects == nil || *w.SideEffects != admissionregv1.SideEffectClassNone {
		t.Error("want admissionReviewVersions v1 and sideEffects None")
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregv1.Fail {
		t.Error("want failurePolicy Fail: a pod that asked for its data must not start without it")
	}
	if !strings.HasSuffix(w.Name, ".granary.dev") {
		t.Errorf("webhook name %q", w.Name)
	}
}
