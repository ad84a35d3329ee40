package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
)

// registers is the kind the clients read and write: a custom kind with no
// controller, so that what the store does is all there is to see.
var registers = client.Resource{Group: "chaos.example.com", Version: "v1", Kind: "Register", Plural: "registers", Namespaced: true}

const registerDef = `{"apiVersion":"homeostat.io/v1","kind":"ResourceDefinition",
"metadata":{"name":"registers.chaos.example.com"},
"spec":{"group":"chaos.example.com","version":"v1","kind":"Register","plural":"registers",
"schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"value":{"type":"string"}}}}}}}`

const namespace = "chaos"

// apis hands out a client of one of the system's API replicas; which one,
// and at what address, may change as the harness restarts processes.
type apis interface {
	client(i int) *client.Client
}

// kvLoad runs clients that create, update (compare-and-swap on the revision
// they read), delete, get and list registers, and watchers that follow
// them, recording everything in h.
type kvLoad struct {
	h       *history
	apis    apis
	keys    []string
	seq     atomic.Int64
	timeout time.Duration

	mu        sync.Mutex
	counts    map[string]int             // operations by kind and outcome
	latencies map[string][]time.Duration // by kind, answered or not
	failures  []string                   // answers the API must never give (5xx but 503)
}

func newKVLoad(h *history, a apis, keys int) *kvLoad {
	l := &kvLoad{h: h, apis: a, counts: map[string]int{}, latencies: map[string][]time.Duration{}, timeout: 10 * time.Second}
	for i := range keys {
		l.keys = append(l.keys, "r"+strconv.Itoa(i))
	}
	return l
}

func (l *kvLoad) count(what string) {
	l.mu.Lock()
	l.counts[what]++
	l.mu.Unlock()
}

// classify turns an API answer into what the client learned. A 5xx other
// than 503 (and 504 for a watch) is a failure of the system: the API must
// say "not now", not crash.
func (l *kvLoad) classify(op string, err error) (outcome, bool) {
	code := client.StatusCode(err)
	switch {
	case err == nil:
		return outOK, true
	case code == http.StatusNotFound:
		return outNotFound, true
	case code == http.StatusConflict:
		var st *object.Status
		if errors.As(err, &st) && st.Reason == object.ReasonAlreadyExists {
			return outExists, true
		}
		return outConflict, true
	case code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout:
		l.mu.Lock()
		l.failures = append(l.failures, fmt.Sprintf("%s answered %d: %v", op, code, err))
		l.mu.Unlock()
	}
	return outUnknown, false
}

func (l *kvLoad) run(ctx context.Context, clients int, pace time.Duration) {
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); l.client(ctx, i, pace) }()
	}
	wg.Wait()
}

// client is one client's loop of random operations.
func (l *kvLoad) client(ctx context.Context, id int, pace time.Duration) {
	revs := map[string]uint64{} // the revision this client last read, by key
	for ctx.Err() == nil {
		key := l.keys[rand.IntN(len(l.keys))]
		switch r := rand.IntN(100); {
		case r < 30:
			revs[key] = l.get(ctx, id, key)
		case r < 60:
			if revs[key] == 0 {
				revs[key] = l.get(ctx, id, key)
			}
			if revs[key] != 0 {
				l.update(ctx, id, key, revs[key])
				revs[key] = 0
			}
		case r < 75:
			l.create(ctx, id, key)
		case r < 85:
			l.delete(ctx, id, key)
		default:
			l.list(ctx, id)
		}
		sleepJitter(ctx, pace)
	}
}

// sleepJitter paces the load: a random pause of up to 2d.
func sleepJitter(ctx context.Context, d time.Duration) {
	if d > 0 {
		clock.Sleep(ctx, time.Duration(rand.Int64N(int64(2*d))))
	}
}

func (l *kvLoad) value(id int) string { return fmt.Sprintf("c%d-%d", id, l.seq.Add(1)) }

func register(key, value, rv string) *object.Object {
	return &object.Object{APIVersion: registers.APIVersion(), Kind: registers.Kind,
		Metadata: object.Meta{Name: key, Namespace: namespace, ResourceVersion: rv},
		Spec:     []byte(fmt.Sprintf(`{"value":%q}`, value))}
}

func valueOf(o *object.Object) string {
	var spec struct{ Value string }
	_ = o.DecodeSpec(&spec)
	return spec.Value
}

func revOf(o *object.Object) uint64 {
	n, _ := strconv.ParseUint(o.Metadata.ResourceVersion, 10, 64)
	return n
}

// do runs one request of kind with the harness's deadline and records
// how long it took.
func (l *kvLoad) do(ctx context.Context, id int, kind string, fn func(context.Context, *client.Client) error) error {
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	start := time.Now()
	err := fn(rctx, l.apis.client(id))
	if ctx.Err() != nil && err != nil {
		return ctx.Err() // the run ended: not an answer of the system
	}
	l.mu.Lock()
	l.latencies[kind] = append(l.latencies[kind], time.Since(start))
	l.mu.Unlock()
	return err
}

func (l *kvLoad) get(ctx context.Context, id int, key string) uint64 {
	in, call := kvInput{Kind: opGet, Key: key}, l.h.now()
	var o *object.Object
	err := l.do(ctx, id, "get", func(ctx context.Context, c *client.Client) (err error) {
		o, err = c.Get(ctx, registers, namespace, key)
		return err
	})
	if errors.Is(err, context.Canceled) {
		return 0
	}
	out, _ := l.classify("get", err)
	l.count("get " + out.String())
	if out == outOK {
		l.h.kv(id, in, call, kvOutput{Outcome: outOK, Value: valueOf(o), Rev: revOf(o)})
		return revOf(o)
	}
	l.h.kv(id, in, call, kvOutput{Outcome: out})
	return 0
}

func (l *kvLoad) create(ctx context.Context, id int, key string) {
	v := l.value(id)
	in, call := kvInput{Kind: opCreate, Key: key, Value: v}, l.h.now()
	var o *object.Object
	err := l.do(ctx, id, "create", func(ctx context.Context, c *client.Client) (err error) {
		o, err = c.Create(ctx, registers, register(key, v, ""))
		return err
	})
	l.write("create", id, in, call, o, err)
}

func (l *kvLoad) update(ctx context.Context, id int, key string, rev uint64) {
	v := l.value(id)
	in, call := kvInput{Kind: opUpdate, Key: key, Value: v, Rev: rev}, l.h.now()
	var o *object.Object
	err := l.do(ctx, id, "update", func(ctx context.Context, c *client.Client) (err error) {
		o, err = c.Update(ctx, registers, register(key, v, strconv.FormatUint(rev, 10)), false)
		return err
	})
	l.write("update", id, in, call, o, err)
}

func (l *kvLoad) delete(ctx context.Context, id int, key string) {
	in, call := kvInput{Kind: opDelete, Key: key}, l.h.now()
	var o *object.Object
	err := l.do(ctx, id, "delete", func(ctx context.Context, c *client.Client) (err error) {
		o, err = c.Delete(ctx, registers, namespace, key, client.DeleteOptions{})
		return err
	})
	l.write("delete", id, in, call, o, err)
}

// write records a write; one cut short by the end of the run counts as a
// write of unknown outcome.
func (l *kvLoad) write(op string, id int, in kvInput, call int64, o *object.Object, err error) {
	out, _ := l.classify(op, err)
	l.count(op + " " + out.String())
	res := kvOutput{Outcome: out}
	if out == outOK && o != nil {
		res.Rev = revOf(o)
	}
	l.h.kv(id, in, call, res)
}

func (l *kvLoad) list(ctx context.Context, id int) {
	call := l.h.now()
	var lst *object.List
	err := l.do(ctx, id, "list", func(ctx context.Context, c *client.Client) (err error) {
		lst, err = c.List(ctx, registers, namespace, client.ListOptions{})
		return err
	})
	out, _ := l.classify("list", err)
	l.count("list " + out.String())
	if out != outOK {
		return
	}
	items := map[string]item{}
	for _, o := range lst.Items {
		items[o.Metadata.Name] = item{valueOf(o), revOf(o)}
	}
	rev, _ := strconv.ParseUint(lst.Metadata.ResourceVersion, 10, 64)
	l.h.list(listOp{Call: call, Return: l.h.now(), Rev: rev, Items: items})
}

// watch follows the registers until ctx ends: it resumes from the last
// revision it saw when its stream ends, and lists again when told that
// revision is gone (410) or not there (504, a store that lost its tail).
func (l *kvLoad) watch(ctx context.Context, id int, w *watchLog) {
	rv := ""
	for ctx.Err() == nil {
		c := l.apis.client(id)
		if rv == "" {
			lctx, cancel := context.WithTimeout(ctx, l.timeout)
			lst, err := c.List(lctx, registers, namespace, client.ListOptions{})
			cancel()
			if err != nil {
				w.note("list: %v", err)
				sleepJitter(ctx, 200*time.Millisecond)
				continue
			}
			items := map[string]item{}
			for _, o := range lst.Items {
				items[o.Metadata.Name] = item{valueOf(o), revOf(o)}
			}
			w.relist(items)
			rv = lst.Metadata.ResourceVersion
		}
		events, err := c.Watch(ctx, registers, namespace, "", client.ListOptions{AllowWatchBookmarks: true}, rv)
		if err != nil {
			w.note("watch from %s: %v", rv, err)
			if code := client.StatusCode(err); code == http.StatusGone || code == http.StatusGatewayTimeout {
				rv = ""
			}
			sleepJitter(ctx, 200*time.Millisecond)
			continue
		}
		w.note("watching from %q on %s", rv, c.Server())
		rv = l.follow(events, w, rv)
		w.note("stream ended at %q", rv)
		if ctx.Err() == nil && rv != "" {
			w.resumed()
		}
	}
}

// follow records a watch stream's events and returns the revision to
// resume from ("" to list again).
func (l *kvLoad) follow(events <-chan client.Event, w *watchLog, rv string) string {
	for ev := range events {
		if ev.Type == object.Error {
			w.note("error event: %v", ev.Status)
			if ev.Status != nil && ev.Status.Code == http.StatusGone {
				return ""
			}
			continue
		}
		if ev.Type == object.Bookmark {
			rv = ev.Object.Metadata.ResourceVersion
			continue
		}
		w.event(watchEvent{Type: ev.Type, Key: ev.Object.Metadata.Name, Value: valueOf(ev.Object), Rev: revOf(ev.Object)})
		rv = ev.Object.Metadata.ResourceVersion
	}
	return rv
}
