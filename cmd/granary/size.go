// Byte sizes as people write them ("512MiB", "1.5GB", "4096") for flags,
// environment variables and the YAML file.
package main

import (
	"fmt"
	"math/big"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Size is a byte count. In YAML it is an integer or a string that
// ParseSize accepts.
type Size int64

// sizeUnits maps a lower-case suffix to its multiplier. Binary units carry
// an "i" (KiB = 1024), decimal ones do not (KB = 1000), as in IEC 80000-13;
// a bare letter is decimal too (k = 1000), as in Kubernetes quantities.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20,
	"gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a non-negative byte count: a decimal number (fractions
// allowed) followed by an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB,
// TiB; case-insensitive; space allowed before the unit). A fractional
// result is rounded down to whole bytes.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 512MiB", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("invalid size %q: bad number %q", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // r >= 0, so this rounds down
	if !n.IsInt64() {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return Size(n.Int64()), nil
}

// String renders n with the largest binary unit that divides it exactly
// ("8MiB", "1GiB", "1500B"), so that ParseSize(n.String()) == n.
func (n Size) String() string {
	units := []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n != 0 && int64(n)%u.mult == 0 {
			return fmt.Sprintf("%d%s", int64(n)/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(n))
}

// UnmarshalYAML accepts an integer byte count or a size string.
func (n *Size) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a size must be a number or a string like 512MiB", node.Line)
	}
	v, err := ParseSize(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*n = v
	return nil
}
