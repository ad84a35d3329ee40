package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/pki"
)

// The embedded NATS server of `up` trusts an operator whose keys are made
// once in <data-dir>/nats and kept there, readable by their owner only. No
// well-known password exists: a client holds credentials the operator's
// account signed, carrying its permissions, or is refused.

func natsDir(dataDir string) string { return filepath.Join(dataDir, "nats") }

// controlPlaneCreds are the credentials of up's control plane, kept in
// <data-dir>/nats/homeostat.creds for processes that join it, and made
// again when the operator's keys no longer sign them.
func controlPlaneCreds(dataDir string, op *bus.Operator) ([]byte, error) {
	path := filepath.Join(natsDir(dataDir), "homeostat.creds")
	creds, err := os.ReadFile(path)
	if err == nil && op.Issued(creds) {
		return creds, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if creds, err = op.RoleCreds(bus.RoleAPI); err != nil {
		return nil, err
	}
	return creds, pki.WriteFile(path, creds, 0o600)
}

// natsFlags are the flags every nats subcommand shares.
type natsFlags struct{ dir, out string }

func (f *natsFlags) register(c *cobra.Command, outHelp string) {
	c.Flags().StringVar(&f.dir, "operator-dir", natsDir(defaultDataDir()), "directory of the operator's keys (made on first use)")
	c.Flags().StringVarP(&f.out, "output", "o", "", outHelp)
}

func newNATS() *cobra.Command {
	cmd := &cobra.Command{Use: "nats", Short: "Credentials and server configuration for the bus"}
	cmd.AddCommand(newNATSCreds(), newNATSInit())
	return cmd
}

func newNATSCreds() *cobra.Command {
	var f natsFlags
	var node, role string
	cmd := &cobra.Command{
		Use:   "creds (--node NAME | --role ROLE)",
		Short: "Mint NATS credentials: a node agent's (its own node only) or a control-plane role's (only what the role writes)",
		Example: "  homeostat nats creds --node worker-1 -o worker-1.creds\n" +
			"  homeostat nodeagent --name worker-1 --nats-creds worker-1.creds --nats nats://HOST:4222\n" +
			"  homeostat nats creds --role controllers -o controllers.creds",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if (node == "") == (role == "") {
				return errors.New("give one of --node NAME or --role ROLE")
			}
			op, err := bus.LoadOperator(f.dir)
			if err != nil {
				return err
			}
			var c []byte
			if node != "" {
				c, err = op.NodeCreds(node)
			} else {
				c, err = roleCreds(op, role)
			}
			if err != nil {
				return err
			}
			return writeOut(f.out, c)
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "the node whose agent the credentials are for")
	cmd.Flags().StringVar(&role, "role", "", roleHelp)
	f.register(cmd, "file to write (owner-only); standard output when empty")
	return cmd
}

const roleHelp = "a control-plane role: api (the whole account), controllers, scheduler, or simulated (a host of simulated nodes)"

func roleCreds(op *bus.Operator, name string) ([]byte, error) {
	r, err := bus.ParseRole(name)
	if err != nil {
		return nil, fmt.Errorf("--role: %w", err)
	}
	return op.RoleCreds(r)
}

func newNATSInit() *cobra.Command {
	var f natsFlags
	var roles, nodes []string
	cmd := &cobra.Command{
		Use:   "init -o DIR [--role ROLE,...] [--node NAME,...]",
		Short: "Write a NATS deployment's auth: the servers' configuration (auth.conf, to include) and each role's credentials (ROLE.creds)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if f.out == "" {
				return errors.New("-o DIR is required: the directory to write into")
			}
			op, err := bus.LoadOperator(f.dir)
			if err != nil {
				return err
			}
			conf, err := op.ServerConfig()
			if err != nil {
				return err
			}
			files := map[string][]byte{"auth.conf": conf}
			for _, role := range roles {
				if files[role+".creds"], err = roleCreds(op, role); err != nil {
					return err
				}
			}
			for _, node := range nodes {
				if files[node+".creds"], err = op.NodeCreds(node); err != nil {
					return err
				}
			}
			if err := os.MkdirAll(f.out, 0o755); err != nil {
				return err
			}
			for name, data := range files {
				if err := writeOut(filepath.Join(f.out, name), data); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&roles, "role", nil, "roles to write credentials for: "+roleHelp)
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "nodes to write agents' credentials for")
	f.register(cmd, "the directory to write into")
	return cmd
}

// writeOut writes secret data to path, or to standard output.
func writeOut(path string, data []byte) error {
	if path == "" {
		_, err := os.Stdout.Write(data)
		return err
	}
	if err := pki.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
