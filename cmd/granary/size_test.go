// Tests of byte-size parsing and rendering.
package main

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want Size
	}{
		{"0", 0},
		{"4096", 4096},
		{"4096B", 4096},
		{"512MiB", 512 << 20},
		{"512mib", 512 << 20},
		{"512Mi", 512 << 20},
		{"4GiB", 4 << 30},
		{"4 GiB", 4 << 30},
		{" 4GiB ", 4 << 30},
		{"1.5GB", 1_500_000_000},
		{"1.5GiB", 3 << 29},
		{"10k", 10_000},
		{"10KB", 10_000},
		{"10KiB", 10 << 10},
		{"2T", 2_000_000_000_000},
		{"1TiB", 1 << 40},
		{".5KiB", 512},
		{"1.0001KiB", 1024}, // 1024.1024 bytes, rounded down
		{"8388608", 8 << 20},
	}
	for _, c := range good {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	bad := []string{"", "GiB", "-1", "-1GiB", "1.2.3MB", "1e9", "12XB", "1 G i B", "0x10", "99999999999TiB", ".", "1,5GB"}
	for _, in := range bad {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestSizeStringRoundTrips(t *testing.T) {
	cases := map[Size]string{0: "0B", 1: "1B", 1500: "1500B", 4096: "4KiB", 8 << 20: "8MiB", 1 << 30: "1GiB", 10 << 30: "10GiB", 3 << 29: "1536MiB", 1 << 40: "1TiB"}
	for n, want := range cases {
		if got := n.String(); got != want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(n), got, want)
		}
		back, err := ParseSize(n.String())
		if err != nil || back != n {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", n.String(), back, err, int64(n))
		}
	}
}

func TestSizeYAML(t *testing.T) {
	var v struct {
		A Size `yaml:"a"`
		B Size `yaml:"b"`
	}
	if err := yaml.Unmarshal([]byte("a: 2GiB\nb: 1024\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 2<<30 || v.B != 1024 {
		t.Fatalf("got %d, %d", v.A, v.B)
	}
	for _, doc := range []string{"a: [1]\n", "a: lots\n", "a: -5\n"} {
		if err := yaml.Unmarshal([]byte(doc), &v); err == nil {
			t.Errorf("%q: want an error", doc)
		}
	}
}

func TestRAMTierShareOfBudget(t *testing.T) {
	for _, c := range []struct{ budget, tier int64 }{
		{8 << 20, 7 << 20},                   // small budgets keep 7/8
		{1 << 30, 1<<30 - 128<<20},           // 1 GiB: an eighth is reserved
		{4 << 30, 4<<30 - maxWorkingReserve}, // large budgets: the reserve is capped
	} {
		if got := ramTierBytes(c.budget); got != c.tier {
			t.Errorf("ramTierBytes(%d) = %d, want %d", c.budget, got, c.tier)
		}
	}
}
