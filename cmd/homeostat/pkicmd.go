package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/pki"
)

func newPKI() *cobra.Command {
	cmd := &cobra.Command{Use: "pki", Short: "Issue certificates of the cluster's authority for its other servers"}
	var (
		hosts          []string
		usage, dataDir string
		out            string
		ttl            time.Duration
	)
	issue := &cobra.Command{
		Use:   "issue NAME --host H... --out DIR",
		Short: "Write NAME.crt, NAME.key and ca.crt for a server of the cluster (a NATS server, say)",
		Long: "Issues a certificate from the authority in the data directory (made when missing, as up and\n" +
			"api make it), for the hosts given, and writes it with its key and the authority's certificate.\n" +
			"--usage peer makes one that cluster members both serve and present to each other.",
		Example: "  homeostat pki issue nats --host nats1 --host nats2 --usage peer --out /srv/pki/nats",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, ok := map[string]pki.Usage{"server": pki.ServerAuth, "peer": pki.PeerAuth, "client": pki.ClientAuth}[usage]
			if !ok {
				return fmt.Errorf("--usage must be server, peer or client, not %q", usage)
			}
			if len(hosts) == 0 && u != pki.ClientAuth {
				return errors.New("--host is required for a server certificate")
			}
			ca, err := pki.LoadOrCreateCA(filepath.Join(dataDir, "pki"))
			if err != nil {
				return err
			}
			is, err := ca.Issue(pki.Request{CommonName: args[0], Hosts: hosts, Usage: u, Lifetime: ttl})
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			for _, f := range []struct {
				name string
				data []byte
				mode os.FileMode
			}{{args[0] + ".crt", is.CertPEM, 0o644}, {args[0] + ".key", is.KeyPEM, 0o600}, {"ca.crt", ca.CertPEM(), 0o644}} {
				if err := pki.WriteFile(filepath.Join(out, f.name), f.data, f.mode); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/{%s.crt,%s.key,ca.crt}: valid until %s\n", out, args[0], args[0], is.Cert.NotAfter.Format(time.RFC3339))
			return nil
		},
	}
	f := issue.Flags()
	f.StringArrayVar(&hosts, "host", nil, "host name or address the certificate is for; repeat for more")
	f.StringVar(&usage, "usage", "server", "server, peer (server and client, for cluster routes) or client")
	f.StringVar(&dataDir, "data-dir", defaultDataDir(), "data directory holding the cluster's authority (pki/)")
	f.StringVar(&out, "out", ".", "directory to write the files to")
	f.DurationVar(&ttl, "ttl", pki.ServerLifetime, "how long the certificate is valid")
	cmd.AddCommand(issue)
	return cmd
}
