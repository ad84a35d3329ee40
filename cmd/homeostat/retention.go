package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/services/api"
)

// retentionFlags say how long the API keeps what tells why something did
// or did not converge: the reconcile history and Events.
type retentionFlags struct {
	historyMaxAge    time.Duration
	historyPerObject int64
	eventTTL         time.Duration
}

func (r *retentionFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&r.historyMaxAge, "history-max-age", bus.DefaultHistoryMaxAge, "how long the reconcile history is kept")
	fs.Int64Var(&r.historyPerObject, "history-per-object", 100, "reconcile history entries kept per object (the latest)")
	fs.DurationVar(&r.eventTTL, "event-ttl", 0, "how long an Event is kept after its last change (default: --history-max-age)")
}

func (r *retentionFlags) apply(cfg *api.Config) {
	cfg.History = bus.HistoryOptions{MaxAge: r.historyMaxAge, PerObject: r.historyPerObject}
	cfg.EventTTL = r.eventTTL
	if cfg.EventTTL <= 0 {
		cfg.EventTTL = r.historyMaxAge
	}
}
