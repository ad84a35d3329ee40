package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kubeconfig"
)

type globals struct {
	server     string
	kubeconfig string
	context    string
	namespace  string
	logLevel   string
	token      string
	as         string
	asGroups   []string
}

// client is an API client for the client verbs: the server, authority and
// credentials of a kubeconfig (--kubeconfig, else the first of $KUBECONFIG
// that exists, else the one `up` writes in the default data directory),
// with --server or $HOMEOSTAT_SERVER overriding its server.
func (g *globals) client() (*client.Client, error) {
	server, target, err := g.target()
	if err != nil {
		return nil, err
	}
	return client.New(server, target.HTTPClient()), nil
}

// target is the API server the client verbs reach, and how: what
// client() is made of, for a verb that upgrades its connection.
func (g *globals) target() (string, *kubeconfig.Target, error) {
	server := g.server
	if server == "" {
		server = os.Getenv("HOMEOSTAT_SERVER")
	}
	cfg, err := g.config()
	switch {
	case errors.Is(err, kubeconfig.ErrNotFound) && g.kubeconfig == "" && server != "":
		// A plaintext API, or one that will answer 401 but to a token.
		return server, &kubeconfig.Target{Token: g.token, As: g.as, AsGroups: g.asGroups}, nil
	case err != nil:
		return "", nil, err
	}
	target, err := cfg.Target(g.context)
	if err != nil {
		return "", nil, err
	}
	if server == "" {
		server = target.Server
	}
	if g.token != "" {
		// The token is who the requests are: the kubeconfig's own
		// credentials stay home.
		target.Token = g.token
		if target.TLS != nil {
			target.TLS = target.TLS.Clone()
			target.TLS.Certificates, target.TLS.GetClientCertificate = nil, nil
		}
	}
	target.As, target.AsGroups = g.as, g.asGroups
	return server, target, nil
}

// config is the kubeconfig the client verbs read: --kubeconfig, else the
// first of $KUBECONFIG that exists, else the one `up` writes in the
// default data directory.
func (g *globals) config() (*kubeconfig.Config, error) {
	path := kubeconfig.Locate(g.kubeconfig, os.Getenv("KUBECONFIG"), filepath.Join(defaultDataDir(), adminKubeconfig))
	cfg, err := kubeconfig.Load(path)
	if errors.Is(err, kubeconfig.ErrNotFound) && g.kubeconfig == "" {
		return nil, noKubeconfig{path}
	}
	if err != nil {
		return nil, err
	}
	if _, err := cfg.Target(g.context); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// noKubeconfig is the error of a client verb that found no kubeconfig
// where it looks by default.
type noKubeconfig struct{ path string }

func (e noKubeconfig) Error() string {
	return fmt.Sprintf("no kubeconfig at %s: start `homeostat up` (it writes one there), or pass --kubeconfig or set $KUBECONFIG", e.path)
}

func (e noKubeconfig) Unwrap() error { return kubeconfig.ErrNotFound }

func (g *globals) logger() *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(g.logLevel) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "homeostat",
		Short:         "A declarative control plane on NATS JetStream",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", "", "API server URL (default $HOMEOSTAT_SERVER, else the kubeconfig's)")
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file with the server and credentials (default: the first of $KUBECONFIG, else admin.kubeconfig in the default data directory, which up writes)")
	pf.StringVar(&g.context, "context", "", "kubeconfig context to use (default: its current context)")
	pf.StringVarP(&g.namespace, "namespace", "n", "default", "namespace of the objects")
	pf.StringVar(&g.token, "token", "", "bearer token to present instead of the kubeconfig's credentials")
	pf.StringVar(&g.as, "as", "", "user to act as (needs the impersonate permission)")
	pf.StringArrayVar(&g.asGroups, "as-group", nil, "group to act as, with --as; repeat for more")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level of server roles: debug, info, warn, error")
	root.AddCommand(
		newUp(g), newAPI(g), newControllers(g), newScheduler(g), newNodeAgent(g), newDemo(),
		newApply(g), newGet(g), newDescribe(g), newDelete(g), newAPIResources(g),
		newRollout(g), newScale(g), newLogs(g), newPortForward(g), newBench(), newTrace(g), newHistory(g), newExplain(g),
		newToken(g), newAuth(g), newUser(), newAudit(g), newPKI(), newNATS(), newLogShim(), newNATSStore(),
	)
	return root
}
