// The Pod Security Standards, as https://kubernetes.io/docs/concepts/security/pod-security-standards/
// defines them, checked on every pod template of every variant: the
// "baseline" controls (host namespaces, privileged, capabilities beyond
// the default set, hostPath volumes, host ports, AppArmor, SELinux, /proc
// mount, seccomp, sysctls, HostProcess) and the "restricted" ones on top
// (volume types, privilege escalation, non-root, seccomp, capabilities).
// Each pod is held to the level it claims; where it claims less than
// "restricted", the violations must be exactly those its manifest
// explains, and no others.
package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// baselineCaps are the capabilities baseline lets a container add.
var baselineCaps = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// safeSysctls are the sysctls baseline allows.
var safeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}

// seLinuxTypes are the SELinux types baseline allows ("" is unset).
var seLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// restrictedVolumes are the volume kinds restricted allows.
func restrictedVolume(v corev1.Volume) bool {
	s := v.VolumeSource
	return s.ConfigMap != nil || s.CSI != nil || s.DownwardAPI != nil || s.EmptyDir != nil || s.Ephemeral != nil ||
		s.PersistentVolumeClaim != nil || s.Projected != nil || s.Secret != nil
}

// baselineViolations lists what keeps pod (with annotations) from
// "baseline", one line per control and place.
func baselineViolations(pod corev1.PodSpec, annotations map[string]string) []string {
	var v []string
	add := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		add("host namespaces")
	}
	if psc := pod.SecurityContext; psc != nil {
		if psc.WindowsOptions != nil && psc.WindowsOptions.HostProcess != nil && *psc.WindowsOptions.HostProcess {
			add("HostProcess")
		}
		if psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
			add("seccomp Unconfined")
		}
		if o := psc.SELinuxOptions; o != nil && (!slices.Contains(seLinuxTypes, o.Type) || o.User != "" || o.Role != "") {
			add("SELinux options")
		}
		if p := psc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
			add("AppArmor Unconfined")
		}
		for _, s := range psc.Sysctls {
			if !slices.Contains(safeSysctls, s.Name) {
				add("sysctl %s", s.Name)
			}
		}
	}
	for k, val := range annotations {
		if strings.HasPrefix(k, "container.apparmor.security.beta.kubernetes.io/") && val != "runtime/default" && !strings.HasPrefix(val, "localhost/") {
			add("AppArmor annotation %s", k)
		}
	}
	for _, vol := range pod.Volumes {
		if vol.HostPath != nil {
			add("volume %s: hostPath", vol.Name)
		}
	}
	for _, c := range containers(pod) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				add("container %s: host port %d", c.Name, p.HostPort)
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			add("container %s: privileged", c.Name)
		}
		if sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
			add("container %s: HostProcess", c.Name)
		}
		if sc.Capabilities != nil {
			for _, cp := range sc.Capabilities.Add {
				if !slices.Contains(baselineCaps, cp) {
					add("container %s: adds %s", c.Name, cp)
				}
			}
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
			add("container %s: seccomp Unconfined", c.Name)
		}
		if o := sc.SELinuxOptions; o != nil && (!slices.Contains(seLinuxTypes, o.Type) || o.User != "" || o.Role != "") {
			add("container %s: SELinux options", c.Name)
		}
		if p := sc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
			add("container %s: AppArmor Unconfined", c.Name)
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			add("container %s: /proc mount %s", c.Name, *sc.ProcMount)
		}
	}
	return v
}

// restrictedViolations lists what keeps pod from "restricted": what
// keeps it from baseline, and the restricted controls.
func restrictedViolations(pod corev1.PodSpec, annotations map[string]string) []string {
	v := baselineViolations(pod, annotations)
	add := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	for _, vol := range pod.Volumes {
		if !restrictedVolume(vol) {
			add("volume %s: a kind restricted forbids", vol.Name)
		}
	}
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	podNonRoot := psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	podSeccomp := psc.SeccompProfile != nil && psc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		add("pod: runAsUser 0")
	}
	for _, c := range containers(pod) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			add("container %s: privilege escalation allowed", c.Name)
		}
		if nonRoot := sc.RunAsNonRoot; (nonRoot == nil && !podNonRoot) || (nonRoot != nil && !*nonRoot) {
			add("container %s: may run as root", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			add("container %s: runAsUser 0", c.Name)
		}
		if (sc.SeccompProfile == nil && !podSeccomp) || (sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined) {
			add("container %s: no seccomp profile", c.Name)
		}
		caps := sc.Capabilities
		if caps == nil || !slices.Contains(caps.Drop, "ALL") {
			add("container %s: does not drop ALL capabilities", c.Name)
		}
		if caps != nil {
			for _, cp := range caps.Add {
				if cp != "NET_BIND_SERVICE" {
					add("container %s: adds %s (restricted)", c.Name, cp)
				}
			}
		}
	}
	return v
}

// podSecurity is the level each pod template claims, and, below
// "restricted", the violations its manifest explains: for baseline, the
// exact list (none for a pod at "baseline"); for restricted, the
// containers and volumes they may name.
var podSecurity = map[string]struct {
	level     string
	baseline  []string
	justified []string // containers and volumes a restricted violation may name
}{
	"base StatefulSet/granary":     {level: "restricted"},
	"local-pv StatefulSet/granary": {level: "restricted"},
	// The cache is a directory of the node; chown-ing it takes root.
	"hostpath StatefulSet/granary": {level: "privileged", baseline: []string{"volume data: hostPath"},
		justified: []string{"volume data", "container own-data"}},
	"node-local DaemonSet/granary": {level: "privileged", baseline: []string{"volume data: hostPath"},
		justified: []string{"volume data", "container own-data"}},
	"training StatefulSet/granary": {level: "restricted"},
	// Bidirectional mount propagation: Kubernetes allows it only in a
	// privileged container.
	"training Job/train-resnet": {level: "privileged", baseline: []string{"container granary-mount: privileged"},
		justified: []string{"container granary-mount"}},
}

func TestPodSecurity(t *testing.T) {
	seen := map[string]bool{}
	for variant, dirs := range variants {
		o := render(t, dirs...)
		for _, w := range o.workloads() {
			name := variant + " " + w.String()
			seen[name] = true
			want, ok := podSecurity[name]
			if !ok {
				t.Errorf("%s: no Pod Security level claimed for it", name)
				continue
			}
			checkPodSecurity(t, name, w, want.level, want.baseline, want.justified)
		}
	}
	for name := range podSecurity {
		if !seen[name] {
			t.Errorf("%s: claimed, but no variant renders it", name)
		}
	}
}

func checkPodSecurity(t *testing.T, name string, w workload, level string, baseline, justified []string) {
	t.Helper()
	base := baselineViolations(w.pod, w.annotations)
	restricted := restrictedViolations(w.pod, w.annotations)
	switch level {
	case "restricted":
		if len(restricted) > 0 {
			t.Errorf("%s: not at restricted: %q", name, restricted)
		}
	case "baseline", "privileged":
		if len(restricted) == 0 {
			t.Errorf("%s: meets restricted; claim it", name)
		}
		if !slices.Equal(base, baseline) {
			t.Errorf("%s: baseline violations %q, want exactly %q", name, base, baseline)
		}
		for _, v := range restricted {
			if !slices.ContainsFunc(justified, func(j string) bool { return strings.HasPrefix(v, j+":") }) {
				t.Errorf("%s: %s, which its manifest does not need", name, v)
			}
		}
	default:
		t.Fatalf("%s: unknown level %q", name, level)
	}
}

// TestPodSecurityChecks: each control catches what it should, on a pod
// that meets restricted but for one change.
func TestPodSecurityChecks(t *testing.T) {
	ok := func() corev1.PodSpec {
		f, tr := false, true
		return corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &tr,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
			Volumes: []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}
	}
	if v := restrictedViolations(ok(), nil); len(v) > 0 {
		t.Fatalf("the restricted pod: %q", v)
	}
	tr, zero := true, int64(0)
	for _, c := range []struct {
		name     string
		change   func(p *corev1.PodSpec)
		baseline bool // a baseline violation too
	}{
		{"hostNetwork", func(p *corev1.PodSpec) { p.HostNetwork = true }, true},
		{"privileged", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Privileged = &tr }, true},
		{"SYS_ADMIN", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, true},
		{"hostPath", func(p *corev1.PodSpec) {
			p.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}
		}, true},
		{"host port", func(p *corev1.PodSpec) { p.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80}} }, true},
		{"unsafe sysctl", func(p *corev1.PodSpec) { p.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax"}} }, true},
		{"seccomp unconfined", func(p *corev1.PodSpec) {
			p.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}, true},
		{"CHOWN", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN"}
		}, false},
		{"escalation", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }, false},
		{"root", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.RunAsUser = &zero }, false},
		{"no non-root", func(p *corev1.PodSpec) { p.SecurityContext.RunAsNonRoot = nil }, false},
		{"no seccomp", func(p *corev1.PodSpec) { p.SecurityContext.SeccompProfile = nil }, false},
		{"no drop ALL", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Capabilities = nil }, false},
		{"nfs", func(p *corev1.PodSpec) {
			p.Volumes[0].VolumeSource = corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}
		}, false},
	} {
		p := ok()
		c.change(&p)
		if len(restrictedViolations(p, nil)) == 0 {
			t.Errorf("%s: passes restricted", c.name)
		}
		if got := len(baselineViolations(p, nil)) > 0; got != c.baseline {
			t.Errorf("%s: a baseline violation: %v, want %v", c.name, got, c.baseline)
		}
	}
}
