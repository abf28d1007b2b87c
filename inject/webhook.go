// The admission webhook's HTTP side: an AdmissionReview (admission.k8s.io/v1)
// of a pod in, the review's response out, with a JSON patch that replaces
// the pod's spec when Pod changed it. A pod the webhook cannot read is
// refused with the reason; every other pod is allowed.
package inject

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxReview bounds a review's body: a pod spec is far smaller.
const maxReview = 4 << 20

// Review answers one AdmissionReview.
func Review(in admissionv1.AdmissionReview, o Options) admissionv1.AdmissionReview {
	out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta}
	if in.Request == nil {
		return out
	}
	resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
	out.Response = resp
	var pod corev1.Pod
	if err := json.Unmarshal(in.Request.Object.Raw, &pod); err != nil {
		resp.Allowed, resp.Result = false, &metav1.Status{Message: "inject: not a pod: " + err.Error(), Code: http.StatusBadRequest}
		return out
	}
	changed, err := Pod(&pod, o)
	if err != nil {
		resp.Allowed, resp.Result = false, &metav1.Status{Message: err.Error(), Code: http.StatusBadRequest}
		return out
	}
	if !changed {
		return out
	}
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec", "value": pod.Spec}})
	if err != nil {
		resp.Allowed, resp.Result = false, &metav1.Status{Message: "inject: " + err.Error(), Code: http.StatusInternalServerError}
		return out
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	return out
}

// Handler serves Review at any path, for POSTs of a JSON AdmissionReview.
func Handler(o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReview+1))
		if err != nil || len(body) > maxReview {
			http.Error(w, fmt.Sprintf("reading the review: %v (at most %d bytes)", err, maxReview), http.StatusBadRequest)
			return
		}
		var in admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Review(in, o)) // a client gone has no use for an error
	})
}
