package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// A stream's leader cut off from its peers acts as the leader until it
// sees it has lost its quorum (ten seconds without them), while its peers
// elect another within four to nine seconds and take writes. A client that
// still reaches the old leader must not be answered from its stale state:
// each read through it either fails or holds every write acknowledged
// before it began. Found by the fault harness, as a list answered at a
// revision older than acknowledged writes.
func TestReadsThroughACutOffLeader(t *testing.T) {
	ctx := context.Background()
	cl := bustest.NewCluster(t)
	const res = "widgets.example.com"
	s := openStore(t, cl.Conn(t), res)
	for i := range 20 {
		if _, err := s.Create(ctx, widget("default", fmt.Sprintf("w-%02d", i), `{}`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	leader := streamLeader(t, cl, streamOf(res))
	var others []int
	for i := range 3 {
		if i != leader {
			others = append(others, i)
		}
	}
	reader := openStore(t, cl.Conn(t, leader), res)
	writer := openStore(t, cl.Conn(t, others...), res)
	if _, err := reader.List(ctx, bus.ListOptions{Namespace: "default"}); err != nil {
		t.Fatalf("a list before the cut: %v", err)
	}

	cl.Cut(leader, tcpproxy.Drop)
	t.Cleanup(func() { cl.Cut(leader, tcpproxy.Pass) })
	// The state to reach: the other side elects a leader and takes a write.
	var acked uint64
	var name string
	attempt := 0
	poll.Until(t, "a write acknowledged by the servers still together", time.Minute, func() bool {
		attempt++
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		o, err := writer.Create(c, widget("default", fmt.Sprintf("after-%d", attempt), `{}`, nil))
		if err != nil {
			return false
		}
		acked, name = rv(t, o), o.Metadata.Name
		return true
	})

	// Each read through the cut-off server, while it may still take itself
	// for the leader (all at once, so that each is in time): an error, or
	// an answer holding the write.
	check := func(what string, fn func(context.Context) (uint64, []*object.Object, error)) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		rev, items, err := fn(c)
		if err != nil {
			t.Logf("%s through the cut-off server: %v", what, err)
			return
		}
		if rev < acked {
			t.Errorf("%s through the cut-off server answered at revision %d, older than the write acknowledged at %d", what, rev, acked)
		}
		if items != nil && !slices.ContainsFunc(items, func(o *object.Object) bool { return o.Metadata.Name == name }) {
			t.Errorf("%s through the cut-off server lacks %s, acknowledged at %d before it began", what, name, acked)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	read := func(what string, fn func(context.Context) (uint64, []*object.Object, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(what, fn)
		}()
	}
	read("the latest revision", func(c context.Context) (uint64, []*object.Object, error) {
		rev, err := reader.LastRevision(c)
		return rev, nil, err
	})
	read("a get", func(c context.Context) (uint64, []*object.Object, error) {
		o, err := reader.GetConfirmed(c, "default."+name)
		if errors.Is(err, bus.ErrNotFound) {
			return 0, nil, nil // as if it had never been written
		}
		if err != nil {
			return 0, nil, err
		}
		return rv(t, o), []*object.Object{o}, nil
	})
	read("a page of a list", func(c context.Context) (uint64, []*object.Object, error) {
		page, err := reader.List(c, bus.ListOptions{Namespace: "default", Limit: 1})
		if err != nil {
			return 0, nil, err
		}
		return page.Revision, nil, nil
	})
	read("a list", func(c context.Context) (uint64, []*object.Object, error) {
		l, err := reader.List(c, bus.ListOptions{Namespace: "default"})
		if err != nil {
			return 0, nil, err
		}
		return l.Revision, l.Items, nil
	})
	read("catching a cache up", func(c context.Context) (uint64, []*object.Object, error) {
		items := map[string]*object.Object{}
		at, ok, err := reader.CatchUp(c, items, 0, acked, 1000)
		if err != nil || !ok {
			return 0, nil, fmt.Errorf("not caught up (%v)", err)
		}
		var all []*object.Object
		for _, o := range items {
			all = append(all, o)
		}
		return at, all, nil
	})
}

// streamLeader is the index of the server leading stream.
func streamLeader(t *testing.T, cl *bustest.Cluster, stream string) int {
	t.Helper()
	nc, err := nats.Connect(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	leader := -1
	poll.Until(t, "the stream to have a leader", 30*time.Second, func() bool {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(c, stream)
		if err != nil || st.CachedInfo().Cluster == nil {
			return false
		}
		for i := range 3 {
			if st.CachedInfo().Cluster.Leader == cl.Name(i) {
				leader = i
			}
		}
		return leader >= 0
	})
	return leader
}
