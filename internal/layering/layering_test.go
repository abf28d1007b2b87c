// The layering rule, checked against `go list` of the whole module.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/granary-dev/granary"

// upper are the packages (with those under them) above store: they may
// import package store, never a package under it.
var upper = []string{"gateway", "api", "cluster", "ops", "console", "fuse"}

// violations reads `go list -f '{{.ImportPath}} {{join .Imports " "}}'`
// output (non-test imports only) and returns "pkg imports dep" for each
// import of a package under store by a package of upper.
func violations(listing string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !isUpper(fields[0]) {
			continue
		}
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, module+"/store/") {
				out = append(out, fields[0]+" imports "+dep)
			}
		}
	}
	return out
}

func isUpper(pkg string) bool {
	for _, u := range upper {
		if p := module + "/" + u; pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

func TestNoConcreteStoreAbove(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...")
	listing, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(listing), module+"/gateway ") {
		t.Fatalf("go list did not list the gateway:\n%s", listing)
	}
	for _, v := range violations(string(listing)) {
		t.Errorf("%s: use the contract in package store and have cmd/granary wire it in", v)
	}
}

// The checker itself: it must see what the rule forbids, and only that.
func TestViolations(t *testing.T) {
	listing := module + "/gateway context " + module + "/store " + module + "/store/writeback\n" +
		module + "/cluster/peer " + module + "/store/copies\n" +
		module + "/cmd/granary " + module + "/store/writeback\n" +
		module + "/store/writeback " + module + "/store/parts\n" +
		module + "/gatewayx " + module + "/store/pins\n"
	got := violations(listing)
	want := []string{module + "/gateway imports " + module + "/store/writeback",
		module + "/cluster/peer imports " + module + "/store/copies"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFuseIsAClient: the mount is a client of the S3 API and imports none
// of api, gateway, cluster or store, so it works against any node
// (DESIGN.md); placing chunks takes only the leaf internal/ring.
func TestFuseIsAClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/fuse").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), module+"/internal/ring\n") {
		t.Fatalf("go list -deps of fuse does not list internal/ring, which it uses:\n%s", out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, server := range []string{"api", "gateway", "cluster", "store"} {
			if p := module + "/" + server; dep == p || strings.HasPrefix(dep, p+"/") {
				t.Errorf("fuse depends on %s", dep)
			}
		}
	}
}
