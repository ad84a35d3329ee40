package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/pki"
)

func newUser() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Issue client certificates of the cluster's authority"}
	var (
		groups  []string
		ttl     time.Duration
		dataDir string
		out     string
		server  string
		ns      string
	)
	create := &cobra.Command{
		Use:   "create NAME --write-kubeconfig FILE",
		Short: "Write a kubeconfig holding a new client certificate for a user",
		Long: "Issues a client certificate (CN the user, O its groups) from the authority in the data\n" +
			"directory, on the machine that holds it, and writes a kubeconfig with it. What the user\n" +
			"may do is what RoleBindings and ClusterRoleBindings grant the name or its groups. A\n" +
			"certificate cannot be revoked before it expires: give it a short --ttl, or give programs\n" +
			"ServiceAccount tokens (`token create`), which can be.",
		Example: "  homeostat user create alice --group dev --ttl 720h --write-kubeconfig alice.kubeconfig",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("--write-kubeconfig is required: the key is written only there")
			}
			ca, err := pki.LoadCA(filepath.Join(dataDir, "pki"))
			if err != nil {
				return fmt.Errorf("%w (is --data-dir the directory `up` or `api` runs with?)", err)
			}
			if server == "" {
				admin, err := kubeconfig.Load(filepath.Join(dataDir, adminKubeconfig))
				if err != nil {
					return fmt.Errorf("the API's address: %w (pass --server)", err)
				}
				t, err := admin.Target("")
				if err != nil {
					return err
				}
				server = t.Server
			}
			is, err := ca.Issue(pki.Request{CommonName: args[0], Organizations: groups, Usage: pki.ClientAuth, Lifetime: ttl})
			if err != nil {
				return err
			}
			if err := identityKubeconfig(ca, server, args[0], ns, is).Write(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: user %q, groups %v, valid until %s\n", out, args[0], groups, is.Cert.NotAfter.Format(time.RFC3339))
			return nil
		},
	}
	f := create.Flags()
	f.StringArrayVar(&groups, "group", nil, "group of the user; repeat for more")
	f.DurationVar(&ttl, "ttl", pki.ClientLifetime, "how long the certificate is valid")
	f.StringVar(&dataDir, "data-dir", defaultDataDir(), "data directory holding the cluster's authority (pki/)")
	f.StringVar(&out, "write-kubeconfig", "", "file to write the kubeconfig to")
	f.StringVar(&server, "server", "", "API URL to put in it (default: the admin kubeconfig's)")
	f.StringVar(&ns, "context-namespace", "default", "namespace of the kubeconfig's context")
	cmd.AddCommand(create)
	return cmd
}
