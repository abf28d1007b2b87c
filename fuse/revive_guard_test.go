// A guard on the reviver's coverage: every operation of go-fuse's
// RawFileSystem is either declared on the reviver (so it revives the
// request's nodes and translates its handles) or listed, with the reason,
// among the few that carry neither. A go-fuse upgrade that adds an
// operation fails here instead of reaching the bridge unrevived through
// the embedded field.
package fuse

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// needNoReviving are the RawFileSystem methods the reviver leaves to the
// embedded bridge: none names a node id or a file handle, and none
// answers a request of the kernel.
var needNoReviving = map[string]string{
	"String":    "the file system's name for go-fuse's debug log",
	"SetDebug":  "turns go-fuse's request log on or off",
	"Init":      "go-fuse hands the server over once, before any request (the session's INIT is replayed, session.go)",
	"OnUnmount": "go-fuse's notice that the serve loop ended; no request follows",
}

// declaredMethods returns the names of the methods declared on type recv
// (value or pointer receiver) in the package's non-test files. Methods
// promoted from an embedded field are not declared, so they are not
// returned: the point of the guard. The source is the authority, not
// the method set (reflect lists promoted methods alongside declared
// ones, and tells them apart only through compiler-generated wrappers).
func declaredMethods(t *testing.T, recv string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	names := make(map[string]bool)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv != nil && receiverName(fn.Recv.List[0].Type) == recv {
				names[fn.Name.Name] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no methods of %s found in %v: the guard would pass on nothing", recv, files)
	}
	return names
}

// receiverName returns T for a receiver of type T or *T.
func receiverName(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func TestReviverHandlesEveryOperation(t *testing.T) {
	declared := declaredMethods(t, "reviver")
	api := reflect.TypeFor[fuse.RawFileSystem]()
	ours := reflect.TypeFor[*reviver]()
	var missing []string
	for m := range api.Methods() {
		_, allowed := needNoReviving[m.Name]
		switch {
		case declared[m.Name] && allowed:
			t.Errorf("%s is both overridden and listed as needing no reviving: drop it from the list", m.Name)
		case declared[m.Name]:
			// Declared with the interface's signature, not a
			// same-named helper that leaves the bridge's in place.
			got, ok := ours.MethodByName(m.Name)
			if !ok || got.Type.NumIn() != m.Type.NumIn()+1 {
				t.Errorf("reviver.%s is declared but is not the RawFileSystem method", m.Name)
			}
		case !allowed:
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("go-fuse's RawFileSystem has %v, which the reviver neither overrides nor lists in needNoReviving: "+
			"such a request reaches the bridge with a dead worker's node ids and handles (revive_ops.go)", missing)
	}
	for name := range needNoReviving {
		if _, ok := api.MethodByName(name); !ok {
			t.Errorf("needNoReviving lists %s, which RawFileSystem no longer has", name)
		}
	}
}

// TestReviverGuardSeesPromotedMethods checks the guard's premise: the
// method set of *reviver holds the bridge's promoted methods too, so only
// the source tells an override from a pass-through.
func TestReviverGuardSeesPromotedMethods(t *testing.T) {
	declared := declaredMethods(t, "reviver")
	for name := range needNoReviving {
		if _, ok := reflect.TypeFor[*reviver]().MethodByName(name); !ok {
			t.Errorf("*reviver lacks the promoted %s", name)
		}
		if declared[name] {
			t.Errorf("%s reported as declared on reviver", name)
		}
	}
	for _, name := range []string{"Lookup", "Forget", "Read", "Release", "ReleaseDir"} {
		if !declared[name] {
			t.Errorf("the override %s is not seen in the source", name)
		}
	}
	if !declared["revive"] {
		t.Error("unexported helpers of reviver are not seen in the source")
	}
}
