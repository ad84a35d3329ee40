package bus_test

// Lists under stress: linearizable under concurrent writes, and surviving
// the loss of their consumer in the middle of a read.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// ackedWrites records every acknowledged write: per key the highest
// revision acknowledged, and the highest revision overall.
type ackedWrites struct {
	mu     sync.Mutex
	rev    map[string]uint64
	keys   []string
	max    uint64
	writes int
}

func (a *ackedWrites) record(key string, rev uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.rev[key]; !ok {
		a.keys = append(a.keys, key)
	}
	a.rev[key] = max(a.rev[key], rev)
	a.max = max(a.max, rev)
	a.writes++
}

// before copies what has been acknowledged so far: everything a read that
// begins after this call must reflect.
func (a *ackedWrites) before() (map[string]uint64, uint64, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]uint64, len(a.rev))
	for k, v := range a.rev {
		m[k] = v
	}
	return m, a.max, a.writes
}

func (a *ackedWrites) randomKey(r *rand.Rand) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys[r.IntN(len(a.keys))]
}

// TestListLinearizableUnderConcurrentWrites: every List holds every object
// whose create was acknowledged before it began, each at least at the
// revision of its last acknowledged write, and reports a revision at
// least that of every write acknowledged before it began — while other
// goroutines keep updating and creating objects.
func TestListLinearizableUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	const resource = "linear.example.com"
	s := openStore(t, bustest.Conn(t), resource)
	namespaces := []string{"ns-a", "ns-b", "ns-c", "ns-d"}
	acked := &ackedWrites{rev: map[string]uint64{}}
	createAckedWidgets(t, s, namespaces, acked)

	wctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	writers := startConcurrentWriters(wctx, s, namespaces, acked)

	_, _, writesAtStart := acked.before()
	poll.Until(t, "concurrent writes to flow", 30*time.Second, func() bool {
		_, _, w := acked.before()
		return w >= writesAtStart+50
	})

	const listsPerLister = 25
	lists, listErrs := runCheckedLists(ctx, s, namespaces, acked, listsPerLister)
	_, _, writesAtEnd := acked.before()
	stopWriters()
	writers.wg.Wait()
	for err := range listErrs {
		t.Error(err)
	}
	select {
	case err := <-writers.errs:
		t.Fatalf("writer: %v", err)
	default:
	}
	if want := 2*listsPerLister + pagedLists; lists != int64(want) {
		t.Fatalf("%d lists completed, want %d", lists, want)
	}
	t.Logf("%d lists against %d concurrent writes", lists, writesAtEnd-writesAtStart)
}

// createAckedWidgets creates the 200 widgets the writers start from, spread
// over the namespaces, and records each create as acknowledged: the lists
// must hold every one of them.
func createAckedWidgets(t *testing.T, s *bus.Store, namespaces []string, acked *ackedWrites) {
	t.Helper()
	var initial []*object.Object
	for i := range 200 {
		initial = append(initial, widget(namespaces[i%len(namespaces)], fmt.Sprintf("w%03d", i), `{"n":0}`, nil))
	}
	created, errs := s.CreateMany(context.Background(), initial, bus.CreateOptions{})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %s: %v", initial[i].Key(), err)
		}
		acked.record(created[i].Key(), rv(t, created[i]))
	}
}

// concurrentWriters are the goroutines that keep updating and creating
// widgets while the lists run, recording every acknowledged write; they
// stop when their context ends, and keep the first error any of them meets
// before that (errors after it are the cancellation's, not the store's).
type concurrentWriters struct {
	ctx        context.Context
	s          *bus.Store
	namespaces []string
	acked      *ackedWrites
	specSeq    atomic.Int64
	wg         sync.WaitGroup
	errs       chan error
}

// startConcurrentWriters starts four updaters, writing until ctx ends, and
// two creators.
func startConcurrentWriters(ctx context.Context, s *bus.Store, namespaces []string, acked *ackedWrites) *concurrentWriters {
	w := &concurrentWriters{ctx: ctx, s: s, namespaces: namespaces, acked: acked, errs: make(chan error, 16)}
	for u := range 4 { // updaters
		w.wg.Add(1)
		go w.update(u)
	}
	for cr := range 2 { // creators
		w.wg.Add(1)
		go w.create(cr)
	}
	return w
}

// fail keeps an error met while the writers are meant to be running.
func (w *concurrentWriters) fail(err error) {
	if w.ctx.Err() == nil {
		select {
		case w.errs <- err:
		default:
		}
	}
}

// update keeps updating random acknowledged widgets, each from a fresh
// read, retrying its own conflicts, until the writers stop or it fails.
func (w *concurrentWriters) update(u int) {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(u), 1))
	for w.ctx.Err() == nil {
		key := w.acked.randomKey(rng)
		for w.ctx.Err() == nil { // retry on conflict with a fresh read
			cur, err := w.s.Get(w.ctx, key)
			if err != nil {
				w.fail(fmt.Errorf("get %s: %w", key, err))
				return
			}
			next := cur.Clone()
			next.Spec = json.RawMessage(fmt.Sprintf(`{"n":%d}`, w.specSeq.Add(1)))
			up, err := w.s.Update(w.ctx, next, bus.UpdateOptions{Current: cur})
			if errors.Is(err, bus.ErrConflict) {
				continue
			}
			if err != nil {
				w.fail(fmt.Errorf("update %s: %w", key, err))
				return
			}
			n, err := parseRV(up)
			if err != nil {
				w.fail(err)
				return
			}
			w.acked.record(key, n)
			break
		}
	}
}

// maxCreates bounds each creator: the lists check what they hold, not
// how long reading an ever-growing set takes. Unbounded, on one core, the
// set grew until a list of every namespace outlasted the bus's request
// timeout and answered unavailable.
const (
	maxCreates  = 150
	createEvery = 5 * time.Millisecond
)

// create keeps creating new widgets, up to maxCreates, one each
// createEvery so that creates go on while the lists run, until the
// writers stop or it fails.
func (w *concurrentWriters) create(cr int) {
	defer w.wg.Done()
	pace := time.NewTicker(createEvery)
	defer pace.Stop()
	for i := 0; w.ctx.Err() == nil && i < maxCreates; i++ {
		select {
		case <-w.ctx.Done():
			return
		case <-pace.C:
		}
		o := widget(w.namespaces[i%len(w.namespaces)], fmt.Sprintf("new-%d-%d", cr, i), `{}`, nil)
		n, err := w.s.Create(w.ctx, o)
		if err != nil {
			w.fail(fmt.Errorf("create %s: %w", o.Key(), err))
			return
		}
		r, err := parseRV(n)
		if err != nil {
			w.fail(err)
			return
		}
		w.acked.record(n.Key(), r)
	}
}

// pagedLists is how many lists the lister in pages makes.
const pagedLists = 8

// runCheckedLists runs two listers of listsPerLister lists each, of all
// namespaces and of one, and a third of pagedLists lists read in pages of
// three, and checks each list against what was acknowledged before it
// began. It returns how many lists completed and, closed, every
// error met.
func runCheckedLists(ctx context.Context, s *bus.Store, namespaces []string, acked *ackedWrites, listsPerLister int) (int64, <-chan error) {
	var lists atomic.Int64
	listErrs := make(chan error, 2*listsPerLister+pagedLists)
	var lwg sync.WaitGroup
	for l := range 3 {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			n := listsPerLister
			if l == 2 {
				n = pagedLists // each of many pages
			}
			for i := range n {
				ns := ""
				if (i+l)%2 == 1 {
					ns = namespaces[(i/2)%len(namespaces)]
				}
				want, maxRev, _ := acked.before()
				// The second lister takes shared items from the list cache;
				// the third reads in pages, each of a few keys' values.
				var res *bus.ListResult
				var err error
				if l == 2 {
					res, err = listInPages(ctx, s, bus.ListOptions{Namespace: ns, Shared: i%2 == 0, Limit: 3})
				} else {
					res, err = s.List(ctx, bus.ListOptions{Namespace: ns, Shared: l == 1})
				}
				if err != nil {
					listErrs <- fmt.Errorf("list %q: %w", ns, err)
					return
				}
				lists.Add(1)
				if err := checkList(res, ns, want, maxRev); err != nil {
					listErrs <- fmt.Errorf("list %d of namespace %q: %w", i, ns, err)
				}
			}
		}()
	}
	lwg.Wait()
	close(listErrs)
	return lists.Load(), listErrs
}

// listInPages reads every page of a limited list into one result, of the
// first page's revision; each page but the last must be full and say how
// many keys follow it.
func listInPages(ctx context.Context, s *bus.Store, opts bus.ListOptions) (*bus.ListResult, error) {
	all := &bus.ListResult{}
	for page := 0; ; page++ {
		res, err := s.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if page == 0 {
			all.Revision = res.Revision
		} else if res.Revision != all.Revision {
			return nil, fmt.Errorf("page %d has revision %d, the first %d", page, res.Revision, all.Revision)
		}
		all.Items = append(all.Items, res.Items...)
		all.JSON = append(all.JSON, res.JSON...)
		all.Corrupt = append(all.Corrupt, res.Corrupt...)
		if res.Continue == "" {
			return all, nil
		}
		if len(res.Items) != opts.Limit || res.Remaining <= 0 {
			return nil, fmt.Errorf("page %d holds %d items of %d, with %d remaining, and goes on", page, len(res.Items), opts.Limit, res.Remaining)
		}
		opts.Continue = res.Continue
	}
}

// checkList checks one list against what was acknowledged before it began.
func checkList(res *bus.ListResult, ns string, want map[string]uint64, maxRev uint64) error {
	if len(res.Corrupt) > 0 {
		return fmt.Errorf("%d corrupt keys listed", len(res.Corrupt))
	}
	if res.Revision < maxRev {
		return fmt.Errorf("revision %d is below %d, acknowledged before the list began", res.Revision, maxRev)
	}
	got := map[string]uint64{}
	if res.JSON != nil && len(res.JSON) != len(res.Items) {
		return fmt.Errorf("%d items but %d encoded", len(res.Items), len(res.JSON))
	}
	for i, o := range res.Items {
		if res.JSON != nil {
			if err := sameJSON(o, res.JSON[i]); err != nil {
				return err
			}
		}
		if ns != "" && o.Metadata.Namespace != ns {
			return fmt.Errorf("%s is outside the namespace", o.Key())
		}
		if _, dup := got[o.Key()]; dup {
			return fmt.Errorf("%s listed twice", o.Key())
		}
		n, err := parseRV(o)
		if err != nil {
			return err
		}
		got[o.Key()] = n
	}
	var missing, stale []string
	for key, rev := range want {
		if ns != "" && !strings.HasPrefix(key, ns+".") {
			continue
		}
		n, ok := got[key]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s@%d", key, rev))
		case n < rev:
			stale = append(stale, fmt.Sprintf("%s@%d<%d", key, n, rev))
		}
	}
	if len(missing) > 0 || len(stale) > 0 {
		sort.Strings(missing)
		sort.Strings(stale)
		return fmt.Errorf("of %d items, missing %v, older than acknowledged %v", len(res.Items), missing, stale)
	}
	return nil
}

// sameJSON checks that an item's JSON in a shared list is the item's.
func sameJSON(o *object.Object, b []byte) error {
	d, err := object.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: its JSON does not decode: %w", o.Key(), err)
	}
	if d.Key() != o.Key() || d.Metadata.ResourceVersion != o.Metadata.ResourceVersion || string(d.Spec) != string(o.Spec) {
		return fmt.Errorf("%s@%s is encoded as %s@%s %s", o.Key(), o.Metadata.ResourceVersion, d.Key(), d.Metadata.ResourceVersion, d.Spec)
	}
	return nil
}

// TestListSurvivesLostDelivery: a List whose consumer is deleted in the
// middle of its read — after its first pull was answered, before its
// second reaches the server — resumes and still returns every object,
// including those updated while it had no delivery.
func TestListSurvivesLostDelivery(t *testing.T) {
	ctx := context.Background()
	const resource = "listsurvive.example.com"
	stream := streamOf(resource)
	srv := bustest.Conn(t)
	s := openStore(t, srv, resource)
	js := rawJetStream(t, srv)

	// More objects than one pull asks for (512), so the list needs a second pull.
	const total = 700
	created, want, maxRev := createWidgetsInRevisionOrder(t, s, total)

	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := startHoldProxy(t, u.Host, "$JS.API.CONSUMER.MSG.NEXT."+stream+".", 2, false)
	client, err := bus.Connect(ctx, bus.Config{URLs: proxy.URL(), Name: t.Name() + "-proxied"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	cs := openStore(t, client, resource)
	restartsBefore := readRestarts(t, stream)

	done := listInBackground(ctx, cs)
	proxy.waitHeld(t, "the list's second pull")
	if n := deleteConsumers(ctx, t, js, stream); n != 1 {
		t.Fatalf("deleted %d consumers, want the list's one", n)
	}
	// Update objects the list cannot have been sent yet (the newest; its
	// first pull asked for 512 of 700) and some it has; each update moves
	// its object to the end of the stream.
	update := append(append([]*object.Object{}, created[total-50:]...), created[:20]...)
	moveToStreamEnd(t, s, update, want)
	proxy.Release()

	var l listed
	select {
	case l = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the list did not end within 60s")
	}
	if l.err != nil {
		t.Fatalf("list: %v", l.err)
	}
	checkListHoldsCreated(t, l.res, created, maxRev, total)
	if after := readRestarts(t, stream); after <= restartsBefore {
		t.Fatalf("homeostat_bus_read_restarts_total{stream=%q} stayed at %v", stream, after)
	}
	poll.Until(t, "the list's consumers to go", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		return err == nil && n == 0
	})
}

// createWidgetsInRevisionOrder creates total widgets and returns them
// oldest first, so a test can pick those a list reaches first or last;
// with, per key, the revision created, and the highest revision, which a
// list that begins afterwards must reach.
func createWidgetsInRevisionOrder(t *testing.T, s *bus.Store, total int) ([]*object.Object, map[string]uint64, uint64) {
	t.Helper()
	var objs []*object.Object
	for i := range total {
		objs = append(objs, widget("default", fmt.Sprintf("w%04d", i), `{}`, nil))
	}
	created, errs := s.CreateMany(context.Background(), objs, bus.CreateOptions{})
	want := map[string]uint64{}
	var maxRev uint64
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		want[created[i].Key()] = rv(t, created[i])
		maxRev = max(maxRev, rv(t, created[i]))
	}
	sort.Slice(created, func(i, j int) bool { return rv(t, created[i]) < rv(t, created[j]) })
	return created, want, maxRev
}

// listed is what a List run in the background returned.
type listed struct {
	res *bus.ListResult
	err error
}

// listInBackground runs one List, bounded to 60s, while the test acts on
// its consumer, and hands back its result.
func listInBackground(ctx context.Context, cs *bus.Store) <-chan listed {
	done := make(chan listed, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		res, err := cs.List(lctx, bus.ListOptions{})
		done <- listed{res, err}
	}()
	return done
}

// moveToStreamEnd updates each object, which moves it to the end of the
// stream, past where a list in progress has read, and records its new
// revision in want.
func moveToStreamEnd(t *testing.T, s *bus.Store, update []*object.Object, want map[string]uint64) {
	t.Helper()
	for _, o := range update {
		next := o.Clone()
		next.Spec = json.RawMessage(`{"moved":true}`)
		up, err := s.Update(context.Background(), next, bus.UpdateOptions{Current: o})
		if err != nil {
			t.Fatal(err)
		}
		want[up.Key()] = rv(t, up) // not required of the list: written after it began
	}
}

// checkListHoldsCreated checks that a list that began after every object
// in created was written holds all total of them, each at least at the
// revision it was created with, at a revision of at least maxRev.
func checkListHoldsCreated(t *testing.T, res *bus.ListResult, created []*object.Object, maxRev uint64, total int) {
	t.Helper()
	if res.Revision < maxRev {
		t.Fatalf("list revision %d, below %d acknowledged before it began", res.Revision, maxRev)
	}
	got := map[string]uint64{}
	for _, o := range res.Items {
		got[o.Key()] = rv(t, o)
	}
	var missing []string
	for _, o := range created {
		if n, ok := got[o.Key()]; !ok || n < rv(t, o) {
			missing = append(missing, o.Key())
		}
	}
	if len(missing) > 0 || len(res.Items) != total {
		t.Fatalf("list holds %d items, want %d; missing or older than before the list: %v", len(res.Items), total, missing)
	}
}
