package bus_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

// Two API replicas starting together open the same buckets in the same
// order. A bucket made and then updated (its confirmation subject added,
// rollups refused) had the server answer neither the create nor the
// update made while it was in flight: every bucket's first try ran out
// its time, 5 s each, and a cluster of two replicas was not ready within
// two minutes. Now a new bucket is made as it must be, in one request.
func TestReplicasMakeBucketsTogether(t *testing.T) {
	cl := bustest.NewCluster(t)
	var retried atomic.Int64
	conns := make([]*bus.Conn, 2)
	for i := range conns {
		log := slog.New(countWaits{&retried})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := bus.Connect(ctx, bus.Config{URLs: cl.URLs(), Name: fmt.Sprintf("replica-%d", i), Replicas: 3, Logger: log})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns[i] = c
	}
	const buckets = 8
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for k := range buckets {
				if _, err := c.Store(context.Background(), bus.StoreSpec{Resource: fmt.Sprintf("w%d.example.com", k), Kind: "W", Namespaced: true}); err != nil {
					t.Errorf("replica %d, bucket %d: %v", i, k, err)
				}
			}
		})
	}
	wg.Wait()
	// Before, every bucket of both replicas was tried again; a try can
	// also run out on a machine busy enough, but not most of them.
	if n := retried.Load(); n >= buckets {
		t.Fatalf("%d tries again while two replicas made %d buckets together (the server answered neither in time)", n, buckets)
	}
	for k := range buckets {
		assertGuarded(t, cl, fmt.Sprintf("hs_w%d_example_com", k))
	}
}

// countWaits counts the bus's "waiting for the bus" records: a start-up
// step tried again.
type countWaits struct{ n *atomic.Int64 }

func (w countWaits) Enabled(context.Context, slog.Level) bool { return true }
func (w countWaits) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "waiting for the bus" {
		w.n.Add(1)
	}
	return nil
}
func (w countWaits) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w countWaits) WithGroup(string) slog.Handler      { return w }

// assertGuarded checks that bucket's stream has its confirmation subject,
// refuses rollups, and is otherwise what the client library makes for a
// bucket (one made by it beside, compared).
func assertGuarded(t *testing.T, cl *bustest.Cluster, bucket string) {
	t.Helper()
	ctx := context.Background()
	js := rawJetStreamAt(t, cl.URLs())
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	got := st.CachedInfo().Config
	if !slices.Contains(got.Subjects, "$KV."+bucket) || got.AllowRollup {
		t.Fatalf("bucket %s: subjects %v, rollups allowed %v; want its confirmation subject and no rollups", bucket, got.Subjects, got.AllowRollup)
	}
	ref, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ref_" + bucket, History: 1, Storage: jetstream.FileStorage, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	rst, err := js.Stream(ctx, "KV_"+ref.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	want := rst.CachedInfo().Config
	want.Name, want.Subjects, want.AllowRollup, want.Description = got.Name, got.Subjects, got.AllowRollup, got.Description
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("bucket %s's stream differs from the client library's bucket beyond its guard:\ngot  %+v\nwant %+v", bucket, got, want)
	}
}
