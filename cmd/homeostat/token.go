package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/services/api"
)

func newToken(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue and revoke the bearer tokens of ServiceAccounts",
	}
	cmd.AddCommand(newTokenCreate(g), newTokenRevoke(g))
	return cmd
}

func newTokenCreate(g *globals) *cobra.Command {
	var (
		ttl       time.Duration
		audiences []string
		out       string
	)
	cmd := &cobra.Command{
		Use:   "create SERVICEACCOUNT [--ttl D] [--write-kubeconfig FILE]",
		Short: "Print a new token of a ServiceAccount (as kubectl create token does)",
		Long: "Issues a token of the ServiceAccount in the namespace and prints it once: the cluster keeps only its hash.\n" +
			"Use it as a bearer token (--token, or a kubeconfig's user.token); revoke it with `homeostat token revoke`.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 10*time.Minute {
				return errors.New("--ttl must be at least 10m")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			req := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
				"spec": map[string]any{"expirationSeconds": int64(ttl / time.Second), "audiences": audiences}}
			body, _ := json.Marshal(req)
			var tr struct {
				Status struct {
					Token               string    `json:"token"`
					ExpirationTimestamp time.Time `json:"expirationTimestamp"`
				} `json:"status"`
			}
			path := "/api/v1/namespaces/" + g.namespace + "/serviceaccounts/" + args[0] + "/token"
			if err := c.Do(cmd.Context(), http.MethodPost, path, body, "application/json", &tr); err != nil {
				if client.IsNotFound(err) {
					return fmt.Errorf("%v: create the account first (a v1 ServiceAccount named %s in namespace %s)", err, args[0], g.namespace)
				}
				return err
			}
			if out != "" {
				cfg, err := g.config()
				if err != nil {
					return err
				}
				tc, err := cfg.WithToken(g.context, "system:serviceaccount:"+g.namespace+":"+args[0], tr.Status.Token)
				if err != nil {
					return err
				}
				if err := tc.Write(out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (expires %s)\n", out, tr.Status.ExpirationTimestamp.Local().Format(time.RFC3339))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), tr.Status.Token)
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid (at least 10m)")
	cmd.Flags().DurationVar(&ttl, "duration", time.Hour, "the same as --ttl, as kubectl names it")
	cmd.Flags().StringSliceVar(&audiences, "audience", nil, "audiences the token is for (recorded with it)")
	cmd.Flags().StringVar(&out, "write-kubeconfig", "", "write a kubeconfig holding the token to FILE instead of printing it")
	return cmd
}

func newTokenRevoke(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN|NAME",
		Short: "Revoke a token, given itself or the name of its Token object",
		Long: "Deletes the Token object (tokens.homeostat.io) behind a token, after which the API refuses it.\n" +
			"`homeostat get tokens` lists them, with their ServiceAccount in the label " + api.LabelServiceAccount + ".",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name := g.namespace, args[0]
			if strings.HasPrefix(args[0], api.TokenPrefix) {
				var ok bool
				if ns, name, _, ok = api.SplitToken(args[0]); !ok {
					return errors.New("that is not a token of this cluster (hst_<namespace>_<name>_<secret>)")
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := c.ResourceFor(cmd.Context(), "tokens")
			if err != nil {
				return err
			}
			if _, err := c.Delete(cmd.Context(), res, ns, name, client.DeleteOptions{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %s/%s revoked\n", ns, name)
			return nil
		},
	}
}
