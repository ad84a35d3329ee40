package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/pki"
)

// The store's collector runs when the heap has grown past what the last
// collection kept by a quarter, or by storeHeadroom if that is more, and
// never later than Go's default (doubling). Most of a busy store's heap
// is the buffers of the blocks it wrote lately, which hold no pointers,
// so a collection has little to mark; the headroom spares a small store
// collecting at every few megabytes (docs/performance.md, "the store's
// collector paced by its heap"). Only the store: the components' heaps
// are their caches, full of pointers, where collecting more often costs
// far more.
const (
	storeGCFraction = 25       // percent of the live heap
	storeHeadroom   = 64 << 20 // bytes
)

// storeGCPercent is the GOGC the store runs with at live bytes of live
// heap: storeGCFraction, raised to leave at least storeHeadroom, at most
// 100.
func storeGCPercent(live uint64) int {
	if live <= storeHeadroom {
		return 100
	}
	return max(storeGCFraction, int((storeHeadroom*100+live-1)/live))
}

// paceStoreCollector keeps the process's GOGC at storeGCPercent of its
// live heap, looking each second, until ctx ends.
func paceStoreCollector(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := -1
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if pct := storeGCPercent(sample[0].Value.Uint64()); pct != current {
				debug.SetGCPercent(pct)
				current = pct
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// newNATSStore runs the bench's store: an embedded NATS server with
// JetStream on a loopback port, in a process of its own, as a store runs
// beside the components it serves. Hidden, and for the bench alone: it
// asks no credentials of its clients.
func newNATSStore() *cobra.Command {
	var dataDir, addressFile string
	cmd := &cobra.Command{
		Use:    "nats-store",
		Short:  "Run the bench's store, a NATS server on a loopback port that asks no credentials (for bench only)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			// A GOGC given the process is an experiment's: it stands.
			if os.Getenv("GOGC") == "" {
				paced := make(chan struct{})
				go func() { defer close(paced); paceStoreCollector(ctx) }()
				defer func() { cancel(); <-paced }()
			}
			conn, err := bus.Connect(ctx, bus.Config{Name: "nats-store",
				Embedded: &bus.EmbeddedConfig{DataDir: dataDir, Host: "127.0.0.1", Port: -1}})
			if err != nil {
				return err
			}
			defer conn.Close()
			// Whole or not at all: the bench polls for the file.
			if err := pki.WriteFile(addressFile, []byte(conn.ClientURL()), 0o644); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where JetStream keeps its files")
	cmd.Flags().StringVar(&addressFile, "address-file", "", "file the server's client URL is written to once it serves")
	_ = cmd.MarkFlagRequired("data-dir")
	_ = cmd.MarkFlagRequired("address-file")
	return cmd
}
