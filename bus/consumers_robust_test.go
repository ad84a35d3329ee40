package bus_test

// Consumer hygiene: lists and watches delete the consumers they make,
// however they end, even when cancelled while the consumer is being made.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestReadsLeaveNoConsumers: lists and watches delete their consumers when
// they end, however they end; a running watch holds exactly one.
func TestReadsLeaveNoConsumers(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, bustest.Conn(t), "consumers.example.com")
	for i := range 20 {
		if _, err := s.Create(ctx, widget("default", fmt.Sprintf("w%d", i), `{}`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		n, err := s.ConsumerCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	for err := range endManyReads(ctx, s) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	// Well within readInactive (30s), after which the server would remove
	// a forgotten consumer on its own.
	poll.Until(t, "no consumers left after 200 lists and 100 watches", 20*time.Second, func() bool { return count() == 0 })

	wctx, cancel := context.WithCancel(ctx)
	ch, err := s.Watch(wctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, ch)
	if n := count(); n != 1 {
		t.Fatalf("a running watch: %d consumers, want 1", n)
	}
	cancel()
	for range ch {
	}
	poll.Until(t, "the ended watch's consumer to go", 20*time.Second, func() bool { return count() == 0 })
}

// endManyReads runs, concurrently, 4 listers of 50 lists each and 4
// watchers of 25 watches each, every watch ended at a different point of
// its life, so that each way a read can end gets its chance to leave a
// consumer behind. It returns, closed, every error met.
func endManyReads(ctx context.Context, s *bus.Store) <-chan error {
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			listRepeatedly(ctx, s, g, errs)
		}()
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchAndEndRepeatedly(ctx, s, g, errs)
		}()
	}
	wg.Wait()
	close(errs)
	return errs
}

// listRepeatedly is lister g: 50 lists, of every namespace and of one in
// turn, each of which must hold the 20 widgets.
func listRepeatedly(ctx context.Context, s *bus.Store, g int, errs chan<- error) {
	for i := range 50 {
		opts := bus.ListOptions{}
		if i%2 == 1 {
			opts.Namespace = "default"
		}
		res, err := s.List(ctx, opts)
		if err != nil {
			errs <- fmt.Errorf("lister %d, list %d: %w", g, i, err)
			return
		}
		if len(res.Items) != 20 {
			errs <- fmt.Errorf("lister %d, list %d: %d items, want 20", g, i, len(res.Items))
		}
	}
}

// watchAndEndRepeatedly is watcher g: 25 watches, each ended as soon as
// opened, in the middle of its initial list, or once running, in turn, and
// each read until its channel closes, that is until it has ended.
func watchAndEndRepeatedly(ctx context.Context, s *bus.Store, g int, errs chan<- error) {
	for i := range 25 {
		wctx, cancel := context.WithCancel(ctx)
		ch, err := s.Watch(wctx, bus.WatchOptions{})
		if err != nil {
			cancel()
			errs <- fmt.Errorf("watcher %d, watch %d: %w", g, i, err)
			return
		}
		switch i % 3 {
		case 0: // closed as soon as opened, its consumer perhaps still being made
		case 1: // closed in the middle of its initial list
			<-ch
		default: // closed once running
			for ev := range ch {
				if ev.Type == bus.Synced {
					break
				}
			}
		}
		cancel()
		for range ch { // the channel closes once the watch has ended
		}
	}
}

// TestReadCancelledWhileCreatingItsConsumer: a watch or list whose context
// ends after the server has made its consumer, but before the answer has
// reached it, returns at once and still deletes that consumer (rather than
// leaving it for the server to expire after readInactive, 30s).
func TestReadCancelledWhileCreatingItsConsumer(t *testing.T) {
	ctx := context.Background()
	const resource = "cancelcreate.example.com"
	stream := streamOf(resource)
	srv := bustest.Conn(t)
	s := openStore(t, srv, resource)
	for i := range 3 {
		if _, err := s.Create(ctx, widget("default", fmt.Sprintf("w%d", i), `{}`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n, err := s.ConsumerCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	reads := []struct {
		name string
		run  func(context.Context, *bus.Store) error
	}{
		{"watch", func(ctx context.Context, cs *bus.Store) error {
			ch, err := cs.Watch(ctx, bus.WatchOptions{})
			if err != nil {
				return err
			}
			for ev := range ch {
				if ev.Type != bus.Failed {
					return fmt.Errorf("watch delivered %s before it had a consumer", ev.Type)
				}
			}
			return ctx.Err()
		}},
		{"list", func(ctx context.Context, cs *bus.Store) error {
			_, err := cs.List(ctx, bus.ListOptions{})
			return err
		}},
	}
	for _, read := range reads {
		proxy := startHoldProxy(t, u.Host, "$JS.API.CONSUMER.CREATE."+stream+".", 1, true)
		client, err := bus.Connect(ctx, bus.Config{URLs: proxy.URL(), Name: t.Name() + "-" + read.name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		t.Cleanup(proxy.Release) // before the client closes
		cs := openStore(t, client, resource)

		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- read.run(rctx, cs) }()
		proxy.waitHeld(t, "the "+read.name+"'s consumer creation")
		poll.Until(t, "the server to make the "+read.name+"'s consumer", 30*time.Second, func() bool { return count() == 1 })
		cancel()
		select {
		case err := <-done: // while the server's answer is still held
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled %s: %v, want context.Canceled", read.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the cancelled %s did not return within 30s", read.name)
		}
		proxy.Release()
		poll.Until(t, "the cancelled "+read.name+"'s consumer to go", 20*time.Second, func() bool { return count() == 0 })
	}
}
