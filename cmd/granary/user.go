// `granary user add|list|remove|policy`: the users file of a node (or of
// every member of a cluster, which share it), changed under its lock. A
// running node reads the file again within usersPoll.
package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/access"
)

// userSettings are the serve settings that locate the users file.
var userSettings = settingsNamed("data-dir", "users-file", "users-key-file")

// settingsNamed picks serve settings by name.
func settingsNamed(names ...string) []setting {
	var out []setting
	for _, s := range serveSettings {
		if slices.Contains(names, s.name) {
			out = append(out, s)
		}
	}
	return out
}

func newUserCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the access keys of a node and what each may do",
		Long: `Manage the users of a node: access keys with policies, kept in the users
file (<data-dir>/users.json, mode 0600) with their secrets sealed by the key
in <data-dir>/users.key. A running node reads the file again within seconds.
In a cluster, give every member the same two files.

A grant is ACTIONS:BUCKET[/PREFIX]; the actions are read (GET, HEAD, a copy's
source), list, write (PUT, copy, multipart, creating the bucket), delete,
admin (warm, pin, flush, status) or all; BUCKET * is every bucket.`,
		Example: `  granary user add trainer --allow read,list:datasets/imagenet/ --allow write:checkpoints/job-42/
  granary user policy trainer --allow read,list:datasets
  granary user list
  granary user remove trainer`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newUserAddCmd(getenv), newUserListCmd(getenv), newUserRemoveCmd(getenv), newUserPolicyCmd(getenv))
	return cmd
}

// userFlags registers the flags that locate the users file.
func userFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML configuration `file` of the node [env GRANARY_CONFIG]")
	registerFlags(fs, userSettings, Defaults())
}

// usersFiles returns the users file and key file the flags, environment
// and configuration name.
func usersFiles(fs *pflag.FlagSet, getenv Getenv) (string, string, error) {
	cfg, err := LoadConfig(fs, getenv)
	if err != nil {
		return "", "", usageError{err}
	}
	file, key := cfg.usersPaths()
	return file, key, nil
}

func newUserAddCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add ACCESS_KEY",
		Short: "Add a user; its secret is generated (and shown once) unless --secret-file gives it",
		Args:  exactArgs(1),
	}
	userFlags(cmd.Flags())
	allow := cmd.Flags().StringArray("allow", nil, "a `grant` ACTIONS:BUCKET[/PREFIX]; repeat for several")
	secretFile := cmd.Flags().String("secret-file", "", "`file` holding the secret to use")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		grants, err := parseGrants(*allow)
		if err != nil {
			return usageError{err}
		}
		secret, generated := randomString(40, secretAlphabet), true
		if *secretFile != "" {
			if secret, err = readSecretFile(*secretFile); err != nil {
				return usageError{fmt.Errorf("--secret-file: %w", err)}
			}
			generated = false
		}
		if err := access.ValidateKeys(args[0], secret); err != nil {
			return usageError{err}
		}
		file, key, err := usersFiles(cmd.Flags(), getenv)
		if err != nil {
			return err
		}
		u := access.User{AccessKey: args[0], Secret: secret, Grants: grants}
		err = access.UpdateUsers(file, key, func(users []access.User) ([]access.User, error) {
			if slices.ContainsFunc(users, func(o access.User) bool { return o.AccessKey == u.AccessKey }) {
				return nil, usageError{fmt.Errorf("user %q exists; change its grants with 'granary user policy'", u.AccessKey)}
			}
			return append(users, u), nil
		})
		if err != nil {
			return err
		}
		printAdded(cmd.OutOrStdout(), u, generated, file)
		return nil
	}
	return cmd
}

// printAdded tells who added a user how to use it; a generated secret is
// shown here only, since the file holds it sealed.
func printAdded(w io.Writer, u access.User, generated bool, file string) {
	fmt.Fprintf(w, "user %s added to %s, allowed: %s\n", u.AccessKey, file, grantList(u.Grants))
	if generated {
		fmt.Fprintf(w, "  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s\n", u.AccessKey, u.Secret)
		fmt.Fprintln(w, "  (the secret is shown this once; it is stored sealed)")
	}
}

func grantList(gs []access.Grant) string {
	if len(gs) == 0 {
		return "nothing"
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.String()
	}
	return strings.Join(names, " ")
}

func newUserListCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List the users and their grants (never their secrets)", Args: noArgs}
	userFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		file, key, err := usersFiles(cmd.Flags(), getenv)
		if err != nil {
			return err
		}
		users, err := access.LoadUsers(file, key)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ACCESS KEY\tALLOWED")
		for _, u := range users {
			fmt.Fprintf(tw, "%s\t%s\n", u.AccessKey, grantList(u.Grants))
		}
		return tw.Flush()
	}
	return cmd
}

func newUserRemoveCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{Use: "remove ACCESS_KEY", Short: "Remove a user", Args: exactArgs(1)}
	userFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := changeUser(cmd.Flags(), getenv, args[0], func(*access.User) bool { return false })
		if err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "user %s removed\n", args[0])
		}
		return err
	}
	return cmd
}

func newUserPolicyCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{Use: "policy ACCESS_KEY --allow GRANT...", Short: "Replace a user's grants", Args: exactArgs(1)}
	userFlags(cmd.Flags())
	allow := cmd.Flags().StringArray("allow", nil, "a `grant` ACTIONS:BUCKET[/PREFIX]; repeat for several (none: the user may do nothing)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		grants, err := parseGrants(*allow)
		if err != nil {
			return usageError{err}
		}
		err = changeUser(cmd.Flags(), getenv, args[0], func(u *access.User) bool {
			u.Grants = grants
			return true
		})
		if err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "user %s allowed: %s\n", args[0], grantList(grants))
		}
		return err
	}
	return cmd
}

// changeUser applies change to the user named key: the user is kept if
// change returns true, removed otherwise. A missing user is an error.
func changeUser(fs *pflag.FlagSet, getenv Getenv, key string, change func(*access.User) bool) error {
	file, keyFile, err := usersFiles(fs, getenv)
	if err != nil {
		return err
	}
	return access.UpdateUsers(file, keyFile, func(users []access.User) ([]access.User, error) {
		i := slices.IndexFunc(users, func(u access.User) bool { return u.AccessKey == key })
		if i < 0 {
			return nil, usageError{fmt.Errorf("no user %q in %s", key, file)}
		}
		if change(&users[i]) {
			return users, nil
		}
		return slices.Delete(users, i, i+1), nil
	})
}
