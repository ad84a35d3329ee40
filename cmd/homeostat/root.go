package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
)

// DefaultServer is where client verbs look for the API without --server
// or HOMEOSTAT_SERVER; `homeostat up` listens there by default.
const DefaultServer = "http://127.0.0.1:6440"

type globals struct {
	server    string
	namespace string
	logLevel  string
}

func (g *globals) client() *client.Client {
	s := g.server
	if s == "" {
		s = os.Getenv("HOMEOSTAT_SERVER")
	}
	if s == "" {
		s = DefaultServer
	}
	return client.New(s, nil)
}

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
	pf.StringVar(&g.server, "server", "", "API server URL (default $HOMEOSTAT_SERVER or "+DefaultServer+")")
	pf.StringVarP(&g.namespace, "namespace", "n", "default", "namespace of the objects")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level of server roles: debug, info, warn, error")
	root.AddCommand(
		newUp(g), newAPI(g), newControllers(g), newScheduler(g), newNodeAgent(g), newDemo(),
		newApply(g), newGet(g), newDescribe(g), newDelete(g), newAPIResources(g),
		newRollout(g), newScale(g), newLogs(g), newBench(), newTrace(g),
	)
	return root
}
