// Tests of `granary inject`: it refuses to start without TLS, and answers
// an AdmissionReview over HTTPS with the sidecar's patch until stopped.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/granary-dev/granary/inject"
	"github.com/granary-dev/granary/internal/syncbuf"
	"github.com/granary-dev/granary/internal/testcerts"
)

func TestInjectNeedsTLS(t *testing.T) {
	var out bytes.Buffer
	if code := execute(context.Background(), []string{"inject"}, &out, &out, envMap(nil)); code != exitUsage {
		t.Errorf("inject without TLS: exit %d, want %d\n%s", code, exitUsage, out.String())
	}
}

func TestInjectServes(t *testing.T) {
	ca := testcerts.NewCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca.Leaf(t, cert, key)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"inject", "--listen=127.0.0.1:0", "--tls-cert=" + cert, "--tls-key=" + key,
			"--endpoint=http://granary.granary.svc:9000"}, stderr, stderr, envMap(nil))
	}()
	addr := regexp.MustCompile(`https://(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(time.Minute)
	for addr.FindStringSubmatch(stderr.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no address in a minute:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	url := "https://" + addr.FindStringSubmatch(stderr.String())[1] + "/mutate"

	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{inject.LabelMount: "datasets"},
		Annotations: map[string]string{inject.AnnotationUser: "train-resnet"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "trainer", Image: "t"}}}}
	raw, _ := json.Marshal(pod)
	in := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: "u", Object: runtime.RawExtension{Raw: raw}}}
	body, _ := json.Marshal(in)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || !out.Response.Allowed {
		t.Fatalf("review: %v %+v", err, out.Response)
	}
	if !bytes.Contains(out.Response.Patch, []byte(`"--endpoint=http://granary.granary.svc:9000"`)) {
		t.Errorf("the patch does not mount through --endpoint: %s", out.Response.Patch)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("inject exited %d after its context ended\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("inject still runs 30 s after its context ended")
	}
}
