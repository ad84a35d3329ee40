package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

func readHistory(t *testing.T, h *bus.History, resource, key string, since time.Time) []string {
	t.Helper()
	var out []string
	if err := h.Read(context.Background(), resource, key, since, func(data []byte) error {
		out = append(out, string(data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHistoryKeepsEachObjectsLatest: entries are read per object, oldest
// first; each object keeps its latest PerObject entries, whatever the
// others write; since leaves out what came before; an object with none
// reads as empty; a second open with other bounds re-bounds the stream
// rather than failing, and one with none leaves them.
func TestHistoryKeepsEachObjectsLatest(t *testing.T) {
	c := bustest.Conn(t)
	ctx := context.Background()
	h, err := c.History(ctx, bus.HistoryOptions{PerObject: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := h.Append("deployments.apps", "default.web", fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
		if err := h.Append("replicasets.apps", "default.web-1", fmt.Appendf(nil, `{"rs":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	want := `[{"n":2} {"n":3} {"n":4}]`
	poll.Until(t, "the latest three entries of the Deployment", 10*time.Second, func() bool {
		return fmt.Sprint(readHistory(t, h, "deployments.apps", "default.web", time.Time{})) == want
	})
	if got := fmt.Sprint(readHistory(t, h, "replicasets.apps", "default.web-1", time.Time{})); got != `[{"rs":2} {"rs":3} {"rs":4}]` {
		t.Fatalf("the ReplicaSet's history: %s", got)
	}
	if got := readHistory(t, h, "deployments.apps", "default.other", time.Time{}); len(got) != 0 {
		t.Fatalf("an object with no history read %v", got)
	}
	if got := readHistory(t, h, "deployments.apps", "default.web", time.Now().Add(time.Hour)); len(got) != 0 {
		t.Fatalf("entries since an hour from now: %v", got)
	}
	if _, err := c.History(ctx, bus.HistoryOptions{PerObject: 5, MaxAge: time.Hour}); err != nil {
		t.Fatalf("re-bounding the history: %v", err)
	}
	if got := bus.StreamMaxAge(t, c, "HS_HISTORY"); got != time.Hour {
		t.Fatalf("history max age %s after re-bounding, want 1h", got)
	}
	if _, err := c.History(ctx, bus.HistoryOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := bus.StreamMaxAge(t, c, "HS_HISTORY"); got != time.Hour {
		t.Fatalf("opening the history without bounds changed its max age to %s", got)
	}
}

// TestChangesSummariseWrites: the writes made through a context that
// collects changes are summed by verb and resource, a status-only update
// told from another, with the first keys named, and the latest revision
// written kept; writes through other contexts are not counted.
func TestChangesSummariseWrites(t *testing.T) {
	s := newStore(t, bustest.Conn(t))
	var ch bus.Changes
	ctx := bus.WithChanges(context.Background(), &ch)
	var objs []*object.Object
	for i := range 5 {
		objs = append(objs, widget("default", fmt.Sprintf("w%d", i), `{"size":1}`, nil))
	}
	created, errs := s.CreateMany(ctx, objs, bus.CreateOptions{})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := created[0].Clone()
	st.Status = []byte(`{"ready":true}`)
	if _, err := s.Update(ctx, st, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sp := created[1].Clone()
	sp.Spec = []byte(`{"size":2}`)
	if _, err := s.Update(ctx, sp, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, _, err := s.Delete(ctx, created[2].Key(), bus.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(context.Background(), widget("default", "elsewhere", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	// The latest revision written through ctx is the delete's.
	rev, _ := bus.Revision(deleted.Metadata.ResourceVersion)
	if got := ch.Latest(); len(got) != 1 || got[s.Resource()] != rev || rev == 0 {
		t.Fatalf("latest revisions written %v, want %s at %d", got, s.Resource(), rev)
	}
	got := fmt.Sprint(ch.Summary())
	want := fmt.Sprint([]bus.ChangeSummary{
		{Verb: bus.VerbCreated, Resource: s.Resource(), Count: 5, Keys: []string{"default.w0", "default.w1", "default.w2"}},
		{Verb: bus.VerbUpdatedStatus, Resource: s.Resource(), Count: 1, Keys: []string{"default.w0"}},
		{Verb: bus.VerbUpdated, Resource: s.Resource(), Count: 1, Keys: []string{"default.w1"}},
		{Verb: bus.VerbDeleted, Resource: s.Resource(), Count: 1, Keys: []string{"default.w2"}},
	})
	if got != want {
		t.Fatalf("changes:\n got %s\nwant %s", got, want)
	}
}

// TestQueueEntry: a key with nothing queued reads as nil; a queued key
// says since when, and once a worker has it, that it was delivered; an
// acknowledged key is gone from the queue.
func TestQueueEntry(t *testing.T) {
	c := bustest.Conn(t)
	ctx := context.Background()
	if e, err := c.QueueEntry(ctx, "nosuchqueue", "default.a"); err != nil || e != nil {
		t.Fatalf("a queue that does not exist: %+v, %v", e, err)
	}
	q, err := c.Queue(ctx, bus.QueueSpec{Name: "things"})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	if err := q.Add(ctx, bus.Work{Key: "default.a"}); err != nil {
		t.Fatal(err)
	}
	e, err := c.QueueEntry(ctx, "things", "default.a")
	if err != nil || e == nil || e.Delivered || e.Since.Before(before) {
		t.Fatalf("a queued key: %+v, %v", e, err)
	}
	got := make(chan *bus.Delivery, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = q.Consume(cctx, 1, func(d *bus.Delivery) { got <- d; <-cctx.Done() }) }()
	d := poll.Receive(t, "a delivery", 10*time.Second, got)
	e, err = c.QueueEntry(ctx, "things", "default.a")
	if err != nil || e == nil || !e.Delivered {
		t.Fatalf("a key a worker holds: %+v, %v", e, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the acknowledged key to leave the queue", 10*time.Second, func() bool {
		e, err := c.QueueEntry(ctx, "things", "default.a")
		return err == nil && e == nil
	})
}

// BenchmarkHistoryAppend: the cost of a reconcile's history entry, from
// the append to the stream holding it, against a revision-checked object
// write (what every pod's create, bind and status costs).
func BenchmarkHistoryAppend(b *testing.B) {
	c := bustest.Conn(b)
	ctx := context.Background()
	h, err := c.History(ctx, bus.HistoryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	entry := []byte(`{"time":"2026-11-25T12:00:00Z","controller":"replicaset","key":"default.web-7d9f","revision":12,"attempt":1,` +
		`"outcome":"changed","changes":[{"verb":"created","resource":"pods","count":100,"keys":["default.web-7d9f-0","default.web-7d9f-1","default.web-7d9f-2"]}],` +
		`"durationMs":12.5,"traceID":"0af7651916cd43dd8448eb211c80319c","worker":"ctl-1"}`)
	for i := 0; b.Loop(); i++ {
		if err := h.Append("replicasets.apps", fmt.Sprintf("default.web-%d", i%1000), entry); err != nil {
			b.Fatal(err)
		}
	}
	// Done when the stream has taken them all.
	poll.Until(b, "the entries stored", time.Minute, func() bool {
		n, err := bus.LastSeq(ctx, c, "HS_HISTORY")
		return err == nil && n >= uint64(b.N)
	})
}
