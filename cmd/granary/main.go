// Command granary is the Granary binary: the S3 caching node (`serve`) and
// the client subcommands that talk to one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes: 2 for a usage or configuration error (nothing was started),
// 1 for a failure while running.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error in what the user asked (a flag, a variable,
// the config file), which exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	startWithTimerSlack()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// execute runs the command line args and returns the exit code. ctx ends
// on SIGINT or SIGTERM, which stops `serve` gracefully.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv Getenv) int {
	root := newRootCmd(getenv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "granary: %v\n", err)
	if errors.As(err, new(usageError)) {
		fmt.Fprintln(stderr, "Run 'granary --help' or 'granary COMMAND --help' for usage.")
		return exitUsage
	}
	return exitFailure
}

func newRootCmd(getenv Getenv) *cobra.Command {
	root := &cobra.Command{
		Use:   "granary",
		Short: "Granary: an S3-compatible caching gateway for AI training data",
		Long: `Granary keeps training data and checkpoints next to the GPUs: it speaks S3 to
clients, reads a slow origin (a directory or an S3 service) on a miss and
serves every later read from RAM or local disk.

Start a node with 'granary serve' (no configuration needed); every setting
can come from a YAML file (--config), GRANARY_* environment variables or
flags, in increasing order of precedence.`,
		Args:          noArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.Version = Version()
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newServeCmd(getenv), newFlushCmd(getenv), newWarmCmd(getenv), newStatusCmd(getenv), newPinCmd(getenv), newBenchCmd(getenv), newMountCmd(getenv), newUserCmd(getenv), newInjectCmd(), newVersionCmd(getenv))
	return root
}

// usageArgs makes check's refusal of the positional arguments a usage
// error (exit 2), as every other mistake on the command line is.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// noArgs refuses positional arguments (an unknown subcommand lands here
// too); exactArgs and maxArgs want n, or at most n.
var noArgs = usageArgs(cobra.NoArgs)

func exactArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.ExactArgs(n)) }
func maxArgs(n int) cobra.PositionalArgs   { return usageArgs(cobra.MaximumNArgs(n)) }
