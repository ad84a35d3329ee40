package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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
// before it began; through the other side, each holds it. Found by the
// fault harness, as a list answered at a revision older than acknowledged
// writes.
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
	// The state the reads need: the other side has taken a write, and the
	// cut-off server still takes itself for the leader. When the election
	// outlasts its ten seconds, the test heals the cut and tries again.
	for try := 1; ; try++ {
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
		acked, name := writeUntilAcknowledged(t, writer, try)
		if stillLeads(t, cl, leader, streamOf(res)) {
			readAround(t, readAroundSpec{cutOff: reader, healthy: writer, acked: acked, name: name})
			cl.Cut(leader, tcpproxy.Pass)
			return
		}
		cl.Cut(leader, tcpproxy.Pass)
		if try == 3 {
			t.Fatal("in three tries the cut-off server had never still taken itself for the leader once the others took a write")
		}
		t.Logf("try %d: the cut-off server had stepped down before the others took a write; again", try)
	}
}

// writeUntilAcknowledged creates objects through w until one is
// acknowledged, returning its revision and name.
func writeUntilAcknowledged(t *testing.T, w *bus.Store, try int) (uint64, string) {
	t.Helper()
	var acked uint64
	var name string
	n := 0
	poll.Until(t, "a write acknowledged by the servers still together", time.Minute, func() bool {
		n++
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		o, err := w.Create(c, widget("default", fmt.Sprintf("after-%d-%d", try, n), `{}`, nil))
		if err != nil {
			return false
		}
		acked, name = rv(t, o), o.Metadata.Name
		return true
	})
	return acked, name
}

// stillLeads says whether server i, asked alone, names itself the
// stream's leader.
func stillLeads(t *testing.T, cl *bustest.Cluster, i int, stream string) bool {
	t.Helper()
	js := rawJetStreamAt(t, cl.URLs(i))
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := js.Stream(c, stream)
	return err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader == cl.Name(i)
}

type readAroundSpec struct {
	cutOff, healthy *bus.Store
	acked           uint64 // the revision of a write the healthy side acknowledged
	name            string // its object's, in namespace default
}

// readAround reads in every way that promises the acknowledged write,
// through both sides at once: through the cut-off server each read fails
// or holds it, through the healthy side each holds it.
func readAround(t *testing.T, spec readAroundSpec) {
	t.Helper()
	type read func(context.Context, *bus.Store) (uint64, []*object.Object, error)
	reads := map[string]read{
		"the latest revision": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			rev, err := s.LastRevision(c)
			return rev, nil, err
		},
		"a get": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			o, err := s.GetConfirmed(c, "default."+spec.name)
			if errors.Is(err, bus.ErrNotFound) {
				return 0, nil, nil // as if it had never been written
			}
			if err != nil {
				return 0, nil, err
			}
			return rv(t, o), []*object.Object{o}, nil
		},
		"a page of a list": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			page, err := s.List(c, bus.ListOptions{Namespace: "default", Limit: 1})
			if err != nil {
				return 0, nil, err
			}
			return page.Revision, nil, nil
		},
		"a list of a namespace": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			l, err := s.List(c, bus.ListOptions{Namespace: "default"})
			if err != nil {
				return 0, nil, err
			}
			return l.Revision, l.Items, nil
		},
		"a list of everything": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			l, err := s.List(c, bus.ListOptions{})
			if err != nil {
				return 0, nil, err
			}
			return l.Revision, l.Items, nil
		},
		"catching a cache up": func(c context.Context, s *bus.Store) (uint64, []*object.Object, error) {
			items := map[string]*object.Object{}
			at, ok, err := s.CatchUp(c, items, 0, spec.acked, 1000)
			if err != nil || !ok {
				return 0, nil, fmt.Errorf("not caught up (%v)", err)
			}
			var all []*object.Object
			for _, o := range items {
				all = append(all, o)
			}
			return at, all, nil
		},
	}
	// Through the cut-off server, one try, in time; through the others,
	// tries until one answers (a read's consumer waits for the cluster's
	// own leader, which the cut-off server may have been), for a minute.
	check := func(side string, s *bus.Store, mayFail bool, what string, fn read) {
		var rev uint64
		var items []*object.Object
		var err error
		poll.Within(time.Minute, func() bool {
			c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			rev, items, err = fn(c, s)
			return err == nil || mayFail
		})
		switch {
		case err != nil && mayFail:
			t.Logf("%s through %s: %v", what, side, err)
			return
		case err != nil:
			t.Errorf("%s through %s, for a minute: %v", what, side, err)
			return
		}
		if rev < spec.acked {
			t.Errorf("%s through %s answered at revision %d, older than the write acknowledged at %d", what, side, rev, spec.acked)
		}
		if items != nil && !slices.ContainsFunc(items, func(o *object.Object) bool { return o.Metadata.Name == spec.name }) {
			t.Errorf("%s through %s lacks %s, acknowledged at %d before it began", what, side, spec.name, spec.acked)
		}
	}
	// All at once, so that each runs while the cut-off server still takes
	// itself for the leader.
	var wg sync.WaitGroup
	defer wg.Wait()
	for what, fn := range reads {
		wg.Add(2)
		go func() { defer wg.Done(); check("the cut-off server", spec.cutOff, true, what, fn) }()
		go func() { defer wg.Done(); check("the other side", spec.healthy, false, what, fn) }()
	}
}

// streamLeader is the index of the server leading stream.
func streamLeader(t *testing.T, cl *bustest.Cluster, stream string) int {
	t.Helper()
	js := rawJetStreamAt(t, cl.URLs())
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
