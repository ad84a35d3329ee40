package bus_test

// Regression tests of the bus's robustness, all against a real embedded
// NATS server: this file holds the helpers they share, and the tests of an
// unavailable bus and of leases; list_robust_test.go, watch_robust_test.go,
// consumers_robust_test.go and corrupt_test.go hold those of linearizable
// lists under concurrent writes, reads that survive losing their delivery,
// watches from the future, reads that leave no consumers behind, and
// corrupt values that stop nothing; robustproxy_test.go the proxy that
// holds a read at a known point.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// openStore opens a namespaced store of Widgets under its own resource name,
// so that its stream (and its metrics) belong to one test.
func openStore(t *testing.T, c *bus.Conn, resource string) *bus.Store {
	t.Helper()
	s, err := c.Store(context.Background(), bus.StoreSpec{Resource: resource, Kind: "Widget", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// streamOf is the stream behind a resource's bucket (see names.go).
func streamOf(resource string) string {
	return "KV_hs_" + strings.ReplaceAll(resource, ".", "_")
}

func rv(t testing.TB, o *object.Object) uint64 {
	t.Helper()
	n, err := parseRV(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func parseRV(o *object.Object) (uint64, error) {
	n, err := strconv.ParseUint(o.Metadata.ResourceVersion, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("resourceVersion %q of %s is not a revision", o.Metadata.ResourceVersion, o.Key())
	}
	return n, nil
}

// readRestarts sums homeostat_bus_read_restarts_total over the series of one stream.
func readRestarts(t testing.TB, stream string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "homeostat_bus_read_restarts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stream" && l.GetValue() == stream {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// rawJetStream connects a plain NATS client to the server, as an operator
// (or a fault) acting behind the bus's back would.
func rawJetStream(t *testing.T, c *bus.Conn) jetstream.JetStream {
	t.Helper()
	return rawJetStreamAt(t, c.ClientURL())
}

// rawJetStreamAt is a plain JetStream client of the servers at urls,
// closed when the test ends.
func rawJetStreamAt(t *testing.T, urls string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// consumerNames lists the consumers the server holds on a stream.
func consumerNames(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) []string {
	t.Helper()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lister := st.ConsumerNames(ctx)
	for name := range lister.Name() {
		out = append(out, name)
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deleteConsumers deletes every consumer of a stream and returns how many.
func deleteConsumers(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	names := consumerNames(ctx, t, js, stream)
	for _, name := range names {
		if err := js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
	}
	return len(names)
}

// waitSynced reads a watch up to its Synced marker and returns what came before.
func waitSynced(t *testing.T, ch <-chan bus.Event) []bus.Event {
	t.Helper()
	var before []bus.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch closed before Synced")
			}
			if ev.Type == bus.Failed {
				t.Fatalf("watch failed: %v", ev.Err)
			}
			if ev.Type == bus.Synced {
				return before
			}
			before = append(before, ev)
		case <-timeout:
			t.Fatal("no Synced within 30s")
		}
	}
}

// nextEvent reads one event of a watch, failing after a generous deadline.
func nextEvent(t *testing.T, ch <-chan bus.Event) bus.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return bus.Event{}
}

// TestUnavailableBus: once the server is gone, reads and writes through a
// client fail with ErrUnavailable, each within its deadline.
func TestUnavailableBus(t *testing.T) {
	ctx := context.Background()
	srv := bustest.Conn(t)
	client := bustest.Client(t, srv)
	s := openStore(t, client, "unavailable.example.com")
	if _, err := s.Create(ctx, widget("default", "a", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	poll.Until(t, "the client to notice the server is gone", 30*time.Second, func() bool { return !client.Connected() })

	calls := map[string]func(context.Context) error{
		"get": func(ctx context.Context) error { _, err := s.Get(ctx, "default.a"); return err },
		"list": func(ctx context.Context) error {
			_, err := s.List(ctx, bus.ListOptions{Namespace: "default"})
			return err
		},
		"create": func(ctx context.Context) error {
			_, err := s.Create(ctx, widget("default", "b", `{}`, nil))
			return err
		},
	}
	var wg sync.WaitGroup
	errs := make(map[string]error, len(calls))
	var mu sync.Mutex
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			began := time.Now()
			err := call(cctx)
			t.Logf("%s returned after %s: %v", name, time.Since(began).Round(time.Millisecond), err)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, err := range errs {
		if !errors.Is(err, bus.ErrUnavailable) {
			t.Errorf("%s on a stopped bus: %v, want ErrUnavailable", name, err)
		}
	}
}

// TestLeaseTakeoverAndExpiry: a holder takes its own lease back at once;
// another holder is refused, told who holds it; once the holder stops
// renewing, a watch of the key sees it go and another holder takes it.
func TestLeaseTakeoverAndExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := bustest.Conn(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const key, ttl = "somekey", 45 * time.Second
	// A deadline well short of the TTL: an Acquire that waited the lease
	// out would fail.
	quick, cancelQuick := context.WithTimeout(ctx, 15*time.Second)
	defer cancelQuick()
	first, err := l.Acquire(quick, key, "holder-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Acquire(quick, key, "holder-a", ttl) // holder-a restarted
	if err != nil {
		t.Fatalf("the holder taking its lease back: %v", err)
	}
	if again.Holder != "holder-a" || again.Revision <= first.Revision {
		t.Fatalf("retaken lease %+v after %+v", again, first)
	}
	cur, err := l.Acquire(quick, key, "holder-b", ttl)
	if !errors.Is(err, bus.ErrAlreadyExists) || !strings.Contains(err.Error(), "holder-a") {
		t.Fatalf("another holder acquiring: %v, want ErrAlreadyExists naming holder-a", err)
	}
	if cur == nil || cur.Holder != "holder-a" {
		t.Fatalf("another holder acquiring: returned %+v, want the current lease", cur)
	}

	events, err := l.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	nextLease := func() bus.LeaseEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("lease watch closed")
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no lease event within 30s")
		}
		return bus.LeaseEvent{}
	}
	if ev := nextLease(); ev.Synced || ev.Lease == nil || ev.Lease.Holder != "holder-a" {
		t.Fatalf("first lease event %+v, want holder-a's lease", ev)
	}
	if ev := nextLease(); !ev.Synced {
		t.Fatalf("second lease event %+v, want Synced", ev)
	}
	// holder-a's last renewal, short, and then it stops.
	if _, err := l.Acquire(quick, key, "holder-a", time.Second); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextLease()
		if ev.Key != key {
			t.Fatalf("event for %q from a watch of %q", ev.Key, key)
		}
		if ev.Lease == nil {
			break
		}
		if ev.Lease.Holder != "holder-a" {
			t.Fatalf("lease taken by %s before it expired", ev.Lease.Holder)
		}
	}
	if _, err := l.Get(ctx, key); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("get after expiry: %v, want ErrNotFound", err)
	}
	b, err := l.Acquire(ctx, key, "holder-b", ttl)
	if err != nil || b.Holder != "holder-b" {
		t.Fatalf("another holder acquiring the expired lease: %+v, %v", b, err)
	}
	if ev := nextLease(); ev.Lease == nil || ev.Lease.Holder != "holder-b" {
		t.Fatalf("watch after the takeover: %+v, want holder-b's lease", ev)
	}
}

// TestUpdateWhoseAnswerWasLost: a compare-and-swap write that landed but
// whose answer never came (the leader died after storing it; here a proxy
// holds every reply) is recognised by its id when the leader is asked,
// and reported as the success it was, with its revision, not as a
// conflict or a failure.
// heldWrite is a store reached through a hold proxy that passes on the
// holdAt-th write to default.w and holds every answer from then on.
type heldWrite struct {
	proxy   *holdProxy
	asked   <-chan struct{} // the writer asked the leader after the hold
	store   *bus.Store
	subject string
}

func heldWrites(t *testing.T, srv *bus.Conn, resource string, holdAt int) heldWrite {
	t.Helper()
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	subject := "$KV." + streamOf(resource)[len("KV_"):] + ".default.w"
	proxy := startHoldProxy(t, u.Host, "PUB "+subject, holdAt, true)
	asked := proxy.sentNext("$JS.API.STREAM.MSG.GET." + streamOf(resource))
	client, err := bus.Connect(context.Background(), bus.Config{URLs: proxy.URL(), Name: t.Name() + "-proxied"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return heldWrite{proxy: proxy, asked: asked, store: openStore(t, client, resource), subject: subject}
}

func TestUpdateWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	const resource = "lostanswer.example.com"
	srv := bustest.Conn(t)
	s := openStore(t, srv, resource)
	created, err := s.Create(ctx, widget("default", "w", `{"v":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	w := heldWrites(t, srv, resource, 1)
	proxy, asked, cs := w.proxy, w.asked, w.store

	upd := created.Clone()
	upd.Spec = json.RawMessage(`{"v":2}`)
	type result struct {
		o   *object.Object
		err error
	}
	done := make(chan result, 1)
	go func() { o, err := cs.Update(ctx, upd, bus.UpdateOptions{}); done <- result{o, err} }()
	proxy.waitHeld(t, "the update")
	var landed *object.Object
	poll.Until(t, "the update stored", 10*time.Second, func() bool {
		landed, err = s.Get(ctx, "default.w")
		return err == nil && string(landed.Spec) == `{"v":2}`
	})
	poll.Receive(t, "the writer to ask the leader after its write went unanswered", 30*time.Second, asked)
	proxy.Release()
	r := poll.Receive(t, "Update to return", 30*time.Second, done)
	if r.err != nil {
		t.Fatalf("Update = %v, want the success it was", r.err)
	}
	if r.o.Metadata.ResourceVersion != landed.Metadata.ResourceVersion {
		t.Fatalf("Update answered revision %s, the store holds it at %s", r.o.Metadata.ResourceVersion, landed.Metadata.ResourceVersion)
	}
}

// TestCreateWhoseFateIsUnknown: a create over a tombstone whose answer is
// lost, and whose object is deleted by someone else before the writer can
// look, may have landed: it must answer "unavailable", never "already
// exists", which would deny a write that was made.
func TestCreateWhoseFateIsUnknown(t *testing.T) {
	ctx := context.Background()
	const resource = "unknownfate.example.com"
	srv := bustest.Conn(t)
	s := openStore(t, srv, resource)
	if _, err := s.Create(ctx, widget("default", "w", `{"v":1}`, nil)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "default.w", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The first write (expecting no history) is refused; the second, over
	// the tombstone, lands unheard.
	w := heldWrites(t, srv, resource, 2)
	proxy, asked, cs, subject := w.proxy, w.asked, w.store, w.subject

	done := make(chan error, 1)
	go func() { _, err := cs.Create(ctx, widget("default", "w", `{"v":2}`, nil)); done <- err }()
	proxy.waitHeld(t, "the create")
	poll.Until(t, "the create stored", 10*time.Second, func() bool {
		o, err := s.Get(ctx, "default.w")
		return err == nil && string(o.Spec) == `{"v":2}`
	})
	if _, _, err := s.Delete(ctx, "default.w", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Receive(t, "the writer to ask the leader after its write went unanswered", 30*time.Second, asked)
	// Let the next try through with its answer: the leader refuses it, for
	// the subject has moved, and shows a tombstone that is not the writer's.
	again := proxy.sentNext("PUB " + subject)
	poll.Receive(t, "the writer to try again", 30*time.Second, again)
	proxy.Release()
	err := poll.Receive(t, "Create to return", 30*time.Second, done)
	if errors.Is(err, bus.ErrAlreadyExists) || errors.Is(err, bus.ErrConflict) || !errors.Is(err, bus.ErrUnavailable) {
		t.Fatalf("Create = %v, want ErrUnavailable alone: the create landed", err)
	}
}
