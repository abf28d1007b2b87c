// `granary serve --print-config`: the configuration a node would run with,
// from the same defaults, file, environment and flags, printed as YAML
// (the file format) instead of served. It checks a deployment's
// configuration (a Kubernetes ConfigMap, the container's environment and
// args) without starting anything; secrets are never in a Config.
package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// printConfig writes the effective configuration of flags and getenv to
// w. A configuration error is a usageError, as it is for serve.
func printConfig(w io.Writer, flags *pflag.FlagSet, getenv Getenv) error {
	cfg, err := LoadConfig(flags, getenv)
	if err != nil {
		return usageError{err}
	}
	if cfg.DirtyLimit == 0 {
		cfg.DirtyLimit = Size(cfg.DirtyBytes()) // the default, made explicit
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("print-config: %w", err)
	}
	_, err = w.Write(out)
	return err
}

// MarshalYAML writes a size as ParseSize reads it ("8MiB").
func (n Size) MarshalYAML() (any, error) { return n.String(), nil }

// MarshalYAML writes a duration as ParseDuration reads it ("1m0s").
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
