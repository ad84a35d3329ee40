package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/gcpace"
	"github.com/homeostat/homeostat/pki"
)

// storePace is the store's collector: it runs when the heap has grown
// past what the last collection kept by a quarter, or by 64 MiB if that
// is more, and never later than Go's default (doubling). Most of a busy
// store's heap is the buffers of the blocks it wrote lately, which hold
// no pointers, so a collection has little to mark; the headroom spares a
// small store collecting at every few megabytes (docs/performance.md,
// "the store's collector paced by its heap").
var storePace = gcpace.Pace{Percent: 25, Headroom: 64 << 20, Max: 100}

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
			defer pace(ctx, storePace)()
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
