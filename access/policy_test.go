// Tests of grants and policies: what each allows and refuses.
package access

import (
	"testing"
)

func mustGrants(t *testing.T, specs ...string) []Grant {
	t.Helper()
	var gs []Grant
	for _, s := range specs {
		g, err := ParseGrant(s)
		if err != nil {
			t.Fatalf("ParseGrant(%q): %v", s, err)
		}
		gs = append(gs, g)
	}
	return gs
}

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		ok      bool
	}{
		{"read,list:datasets/imagenet/", "read,list:datasets/imagenet/", true},
		{"write:checkpoints", "write:checkpoints", true},
		{"ALL:*", "all:*", true},
		{" read , admin :b/p", "read,admin:b/p", true},
		{"read,list,write,delete,admin:b", "all:b", true},
		{"read", "", false},
		{"read:", "", false},
		{"fly:b", "", false},
		{"read:*/p", "", false},
		{"read:/p", "", false},
	} {
		g, err := ParseGrant(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseGrant(%q): err %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && g.String() != tc.out {
			t.Errorf("ParseGrant(%q).String() = %q, want %q", tc.in, g.String(), tc.out)
		}
	}
}

func TestPolicy(t *testing.T) {
	p := NewPolicy(mustGrants(t, "read,list:datasets/imagenet/", "all:ckpt", "admin:*"))
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"read inside the prefix", p.Object(Read, "datasets", "imagenet/a.jpg"), true},
		{"read outside the prefix", p.Object(Read, "datasets", "coco/a.jpg"), false},
		{"write inside a read grant", p.Object(Write, "datasets", "imagenet/a.jpg"), false},
		{"read and list together", p.Object(Read|List, "datasets", "imagenet/x"), true},
		{"another bucket", p.Object(Read, "other", "imagenet/a.jpg"), false},
		{"list the granted prefix", p.Prefix(List, "datasets", "imagenet/"), true},
		{"list deeper", p.Prefix(List, "datasets", "imagenet/train/"), true},
		{"list a shorter prefix", p.Prefix(List, "datasets", "image"), false},
		{"list the whole bucket", p.Prefix(List, "datasets", ""), false},
		{"delete a bucket-wide grant", p.Bucket(Delete, "ckpt"), true},
		{"create under a prefix grant", p.Bucket(Write, "datasets"), false},
		{"node-wide admin", p.Node(Admin), true},
		{"node-wide read", p.Node(Read), false},
		{"sees its bucket", p.Sees("datasets"), true},
		{"sees every bucket through admin:*", p.Sees("other"), true},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	scoped := NewPolicy(mustGrants(t, "read:datasets"))
	if scoped.Sees("other") || scoped.Node(Admin) || scoped.Empty() {
		t.Error("a read grant on one bucket reaches beyond it")
	}
	var none *Policy
	if none.Object(Read, "b", "k") || none.Sees("b") || none.Node(Admin) || !none.Empty() {
		t.Error("the nil policy allows something")
	}
	if !Unrestricted.Object(All, "b", "k") || !Unrestricted.Node(All) || Unrestricted.Empty() {
		t.Error("the unrestricted policy refuses something")
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry("rootkey", "rootsecret-123", nil)
	if r.Policy("rootkey") != Unrestricted {
		t.Fatal("the node's key is not unrestricted")
	}
	if !r.Anonymous().Empty() {
		t.Fatal("anonymous may do something by default")
	}
	users := []User{{AccessKey: "trainer", Secret: "trainer-secret", Grants: mustGrants(t, "read:datasets")}}
	if err := r.SetUsers(users); err != nil {
		t.Fatal(err)
	}
	if s, ok := r.Secret("trainer"); !ok || s != "trainer-secret" {
		t.Fatalf("Secret(trainer) = %q, %v", s, ok)
	}
	if !r.Policy("trainer").Object(Read, "datasets", "x") || r.Policy("trainer").Object(Write, "datasets", "x") {
		t.Fatal("the trainer's policy is not its grants")
	}
	for _, bad := range [][]User{
		{{AccessKey: "rootkey", Secret: "whatever-123"}},
		{{AccessKey: "a", Secret: "12345678"}},
		{{AccessKey: "abc", Secret: "short"}},
		{{AccessKey: "a/b", Secret: "12345678"}},
		{{AccessKey: "twice", Secret: "12345678"}, {AccessKey: "twice", Secret: "87654321"}},
	} {
		if err := r.SetUsers(bad); err == nil {
			t.Errorf("SetUsers(%+v) accepted", bad)
		}
	}
	if _, ok := r.Secret("trainer"); !ok {
		t.Fatal("a refused SetUsers changed the users")
	}
	// Members with the same users in another order agree on the digest;
	// another secret or grant changes it.
	two := []User{users[0], {AccessKey: "ops", Secret: "ops-secret", Grants: mustGrants(t, "admin:*")}}
	other := NewRegistry("rootkey", "rootsecret-123", nil)
	if err := r.SetUsers(two); err != nil {
		t.Fatal(err)
	}
	if err := other.SetUsers([]User{two[1], two[0]}); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != other.Digest() {
		t.Fatal("the same users in another order give another digest")
	}
	two[1].Secret = "ops-secret-2"
	if err := other.SetUsers(two); err != nil || r.Digest() == other.Digest() {
		t.Fatalf("another secret gives the same digest (%v)", err)
	}
	if err := r.SetUsers(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Secret("trainer"); ok || r.Policy("trainer") != nil {
		t.Fatal("a removed user is still accepted")
	}
	if _, ok := r.Secret("rootkey"); !ok {
		t.Fatal("the node's key went with the users")
	}
}
