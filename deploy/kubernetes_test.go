// Tests of deploy/kubernetes: every variant renders and decodes strictly,
// references only what exists, and its granary containers start, with
// their rendered args, environment and files, as real processes that
// answer their probes.
package deploy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// variants are the kustomizations a user applies, each rendered on its
// own; the training Job is applied beside a cache tier, so it is rendered
// with the base.
var variants = map[string][]string{
	"base":       {"base"},
	"local-pv":   {"overlays/local-pv"},
	"hostpath":   {"overlays/hostpath"},
	"node-local": {"overlays/node-local"},
	"training":   {"base", "examples/training-job"},
}

func forEachVariant(t *testing.T, f func(t *testing.T, o *objects)) {
	for name, dirs := range variants {
		t.Run(name, func(t *testing.T) { f(t, render(t, dirs...)) })
	}
}

// granaryArgs returns the subcommand ("serve", "mount") of a container
// running the granary image, or "".
func granaryArgs(c corev1.Container) string {
	if (c.Image != "granary" && !strings.HasPrefix(c.Image, "granary:")) || len(c.Command) > 0 || len(c.Args) == 0 {
		return ""
	}
	return c.Args[0]
}

// containers are a pod's init containers (sidecars included) and its
// containers.
func containers(p corev1.PodSpec) []corev1.Container {
	return append(append([]corev1.Container{}, p.InitContainers...), p.Containers...)
}

// TestKubernetesVariantsShape checks what every variant must hold: one
// cache tier workload behind the client and peer Services, a namespace,
// the Secret and ConfigMap, and the node-local and PV variants' own parts.
func TestKubernetesVariantsShape(t *testing.T) {
	forEachVariant(t, func(t *testing.T, o *objects) {
		if len(o.namespaces) != 1 || o.namespaces[0].Name != "granary" {
			t.Errorf("want the granary Namespace, got %d namespaces", len(o.namespaces))
		}
		for _, obj := range o.all {
			if ns := namespaceOf(obj); ns != "" && ns != "granary" {
				t.Errorf("%T in namespace %q", obj, ns)
			}
		}
		for _, name := range []string{"granary", "granary-peers"} {
			if _, ok := o.services[name]; !ok {
				t.Errorf("Service %s missing", name)
			}
		}
		if _, ok := o.configMaps["granary-config"]; !ok {
			t.Error("ConfigMap granary-config missing")
		}
		if _, ok := o.secrets["granary-keys"]; !ok {
			t.Error("Secret granary-keys missing")
		}
		if n := len(o.statefulSets) + len(o.daemonSets); n != 1 {
			t.Errorf("%d cache tier workloads, want 1", n)
		}
		if len(o.daemonSets) == 1 {
			if p := o.services["granary"].Spec.InternalTrafficPolicy; p == nil || *p != corev1.ServiceInternalTrafficPolicyLocal {
				t.Error("node-local: the client Service must route to the node's own pod (internalTrafficPolicy: Local)")
			}
		}
		for _, s := range o.statefulSets {
			if len(o.pdbs) != 1 || !selects(o.pdbs[0].Spec.Selector.MatchLabels, s.Spec.Template.Labels) {
				t.Errorf("StatefulSet %s: want one PodDisruptionBudget selecting its pods", s.Name)
			}
		}
	})
}

// TestKubernetesReferences checks what only a running cluster would find:
// Services select pods and name their ports, the StatefulSet's service is
// headless, volumes, Secret and ConfigMap keys exist, claims fit their
// volumes, and scrape annotations name the metrics port.
func TestKubernetesReferences(t *testing.T) {
	forEachVariant(t, func(t *testing.T, o *objects) {
		ws := o.workloads()
		for _, svc := range o.services {
			checkService(t, svc, ws)
		}
		for _, s := range o.statefulSets {
			checkStatefulSet(t, o, s)
		}
		root := t.TempDir()
		for _, w := range ws {
			for i, c := range containers(w.pod) {
				resolve(t, o, w, c, fmt.Sprintf("%s/%s-%d", root, w.name, i)) // fails on a missing reference
				checkProbePorts(t, w, c)
				if c.Image == "granary" {
					t.Errorf("%s container %s: image %q was not set by the kustomization's images", w, c.Name, c.Image)
				}
			}
			checkScrape(t, w)
		}
	})
}

func namespaceOf(obj any) string {
	if m, ok := obj.(interface{ GetNamespace() string }); ok {
		return m.GetNamespace()
	}
	return ""
}

// selects reports whether a selector's labels all hold in pod labels.
func selects(sel, pod map[string]string) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(pod))
}

// checkService: the selector matches a workload, whose containers have
// every named target port, with the Service port's protocol.
func checkService(t *testing.T, svc *corev1.Service, ws []workload) {
	t.Helper()
	var matched []workload
	for _, w := range ws {
		if selects(svc.Spec.Selector, w.labels) {
			matched = append(matched, w)
		}
	}
	if len(matched) == 0 {
		t.Errorf("Service %s selects no pods", svc.Name)
		return
	}
	for _, w := range matched {
		for _, p := range svc.Spec.Ports {
			if _, ok := containerPort(w.pod.Containers, p.TargetPort, p.Protocol); !ok {
				t.Errorf("Service %s port %s: %s has no container port %s/%s", svc.Name, p.Name, w, p.TargetPort.String(), p.Protocol)
			}
		}
	}
}

// containerPort resolves a port (name or number) among cs's ports.
func containerPort(cs []corev1.Container, port intstr.IntOrString, proto corev1.Protocol) (int32, bool) {
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	for _, c := range cs {
		for _, p := range c.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if pp != proto {
				continue
			}
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// checkStatefulSet: its service is headless and publishes pods before
// they are ready (a starting pod must find the others); its claims name
// storage classes that exist, with enough volumes for every replica.
func checkStatefulSet(t *testing.T, o *objects, s *appsv1.StatefulSet) {
	t.Helper()
	svc, ok := o.services[s.Spec.ServiceName]
	switch {
	case !ok:
		t.Errorf("StatefulSet %s: serviceName %s is no Service", s.Name, s.Spec.ServiceName)
	case svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses:
		t.Errorf("StatefulSet %s: Service %s must be headless and publish not-ready pods", s.Name, svc.Name)
	}
	for _, c := range s.Spec.VolumeClaimTemplates {
		sc := c.Spec.StorageClassName
		if sc == nil {
			continue // the cluster's default class
		}
		if _, ok := o.storage[*sc]; !ok {
			t.Errorf("claim %s: StorageClass %s does not exist", c.Name, *sc)
		}
		want := c.Spec.Resources.Requests[corev1.ResourceStorage]
		fit := 0
		for _, pv := range o.pvs {
			if pv.Spec.StorageClassName == *sc && pv.Spec.Capacity.Storage().Cmp(want) >= 0 {
				fit++
			}
		}
		if s.Spec.Replicas != nil && fit < int(*s.Spec.Replicas) {
			t.Errorf("claim %s: %d volumes of class %s hold %s, want one per replica (%d)", c.Name, fit, *sc, want.String(), *s.Spec.Replicas)
		}
	}
}

// checkProbePorts: every HTTP probe's port is a port of the container.
func checkProbePorts(t *testing.T, w workload, c corev1.Container) {
	t.Helper()
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		if _, ok := containerPort([]corev1.Container{c}, p.HTTPGet.Port, corev1.ProtocolTCP); !ok {
			t.Errorf("%s container %s: probe port %s is none of its ports", w, c.Name, p.HTTPGet.Port.String())
		}
	}
}

// checkScrape: a pod asking to be scraped names a port of its own and a
// path (TestKubernetesServe GETs it from the running node). Every cache
// tier pod asks to be.
func checkScrape(t *testing.T, w workload) {
	t.Helper()
	a := w.annotations
	if a["prometheus.io/scrape"] != "true" {
		if w.kind != "Job" {
			t.Errorf("%s: no prometheus.io/scrape annotation", w)
		}
		return
	}
	port, err := strconv.Atoi(a["prometheus.io/port"])
	if _, ok := containerPort(w.pod.Containers, intstr.FromInt(port), corev1.ProtocolTCP); err != nil || !ok {
		t.Errorf("%s: prometheus.io/port %q is none of its ports", w, a["prometheus.io/port"])
	}
	if !strings.HasPrefix(a["prometheus.io/path"], "/") {
		t.Errorf("%s: prometheus.io/path %q", w, a["prometheus.io/path"])
	}
}

// probes returns a container's HTTP probes by what they are for.
func probes(c corev1.Container) map[string]*corev1.HTTPGetAction {
	out := map[string]*corev1.HTTPGetAction{}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p != nil && p.HTTPGet != nil {
			out[name] = p.HTTPGet
		}
	}
	return out
}

// portOf is the port of a host:port.
func portOf(t *testing.T, hostport string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%q: %v", hostport, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%q: %v", hostport, err)
	}
	return int32(n)
}

// get GETs u and returns the status and body.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode, string(b)
}

// hostOf is the host of a URL or host:port.
func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Host
	}
	h, _, err := net.SplitHostPort(s)
	if err != nil {
		return s
	}
	return h
}
