package bus

import (
	"context"
	"sort"
	"strings"
	"sync"
)

// fanoutSize is how many of the latest changes a store's fanout keeps for
// its watchers: at 200 changes a second, 20 s of slack for a slow one.
var fanoutSize = 4096

// fanout serves a store's shared watches that resume after a revision
// (WatchOptions.Shared with AfterRevision) from one read of the whole
// bucket, instead of a consumer each: a hundred watchers of a kind cost
// the server one delivery a change, not a hundred. It keeps the latest
// changes, decoded once, in a ring that each watcher reads at its own
// pace. A watcher that falls behind the ring, or outlives the read, goes
// on with a consumer of its own from where it was: none waits for
// another, and none misses a change. The read runs while one watcher
// does; the last to leave ends it.
type fanout struct {
	s      *Store
	from   uint64 // the read delivers every revision after from
	cancel context.CancelFunc

	mu   sync.Mutex
	ring []Event
	n    uint64 // changes read so far; change i is at ring[i%len(ring)]
	// dropped is the revision of the last change overwritten (from when
	// none): a watch after an earlier revision cannot be served.
	dropped uint64
	reached uint64 // the last revision read
	// idle: nothing was pending for the read when it took its last message.
	idle     bool
	wake     chan struct{} // closed on the next change read, or the end
	waited   bool          // someone waits on wake
	ended    bool
	watchers int
}

// joinFanout returns the store's fanout, started when there is none,
// counting one more watcher of it, and the index of the first change it
// holds after revision after; nil when it cannot serve a watch after
// after (it began later, or has dropped changes since).
func (s *Store) joinFanout(after uint64) (*fanout, uint64) {
	s.fanMu.Lock()
	defer s.fanMu.Unlock()
	if s.fan == nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.fan = &fanout{s: s, from: after, dropped: after, reached: after, cancel: cancel,
			ring: make([]Event, fanoutSize), wake: make(chan struct{})}
		go s.fan.run(ctx)
	}
	f := s.fan
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || after < f.dropped {
		return nil, 0
	}
	f.watchers++
	sharedWatchers.WithLabelValues(s.stream()).Inc()
	// Found under the same lock: the ring may move on at any moment.
	return f, f.first(after)
}

// leave counts a watcher out, ending the read with the last.
func (f *fanout) leave() {
	f.s.fanMu.Lock()
	defer f.s.fanMu.Unlock()
	f.mu.Lock()
	f.watchers--
	last := f.watchers == 0
	f.mu.Unlock()
	sharedWatchers.WithLabelValues(f.s.stream()).Dec()
	if last {
		f.cancel()
		if f.s.fan == f {
			f.s.fan = nil
		}
	}
}

// run reads every change after from until ctx ends or the read fails;
// its watchers then go on alone.
func (f *fanout) run(ctx context.Context) {
	spec := f.s.watchSpec(WatchOptions{AfterRevision: f.from, Progress: true})
	spec.what += " for its watchers"
	err := f.s.conn.read(ctx, spec, f.add)
	if err != nil && ctx.Err() == nil {
		f.s.conn.log.Debug("a store's shared watch ended; its watchers go on alone", "resource", f.s.spec.Resource, "err", err)
	}
	f.s.fanMu.Lock()
	if f.s.fan == f {
		f.s.fan = nil
	}
	f.s.fanMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	close(f.wake)
}

// add keeps one message read, decoded once for every watcher.
func (f *fanout) add(m rawMsg) error {
	var ev Event
	if m.seq > 0 {
		if f.s.isConfirmation(m) {
			ev = Event{Type: Progress, Revision: m.seq}
		} else {
			ev = f.s.sharedEvent(m, true, nil)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idle = m.caughtUp
	if m.seq > 0 {
		i := f.n % uint64(len(f.ring))
		if f.n >= uint64(len(f.ring)) {
			f.dropped = f.ring[i].Revision
		}
		f.ring[i] = ev
		f.n++
		f.reached = m.seq
	}
	if f.waited {
		close(f.wake)
		f.wake, f.waited = make(chan struct{}), false
	}
	return nil
}

// first is the index of the first change held after revision after.
// Called with f.mu held.
func (f *fanout) first(after uint64) uint64 {
	size := uint64(len(f.ring))
	lo := f.n - min(f.n, size)
	k := sort.Search(int(f.n-lo), func(k int) bool { return f.ring[(lo+uint64(k))%size].Revision > after })
	return lo + uint64(k)
}

// fanState is what a watcher learns of its fanout in one look.
type fanState struct {
	overrun bool // the watcher's next change has been overwritten
	ended   bool
	reached uint64
	idle    bool
	wake    <-chan struct{} // set when nothing new was there
}

// take appends to batch the changes from index next on, up to its
// capacity.
func (f *fanout) take(next uint64, batch []Event) ([]Event, fanState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	size := uint64(len(f.ring))
	st := fanState{ended: f.ended, reached: f.reached, idle: f.idle}
	if f.n-min(f.n, size) > next {
		st.overrun = true
		return batch, st
	}
	for i := next; i < f.n && len(batch) < cap(batch); i++ {
		batch = append(batch, f.ring[i%size])
	}
	if len(batch) == 0 && !f.ended {
		st.wake, f.waited = f.wake, true
	}
	return batch, st
}

// fanWatch is one watch served by a fanout.
type fanWatch struct {
	f    *fanout
	opts WatchOptions
	// target is the store's last revision when the watch began: it is
	// synced once it has passed it.
	target  uint64
	next    uint64 // index of the next change to read
	last    uint64 // the revision the watch has reached
	synced  bool
	checked uint64 // the reached revision last checked for missing changes
	left    bool
	ch      chan Event
}

// watch serves a watch after opts.AfterRevision on f, which it has
// joined, from the change at index next, until ctx ends.
// ended, when set, is called as the watch ends.
func (f *fanout) watch(ctx context.Context, opts WatchOptions, next, target uint64, ended func()) <-chan Event {
	buffer := opts.Buffer
	if buffer == 0 {
		buffer = 256
	}
	w := &fanWatch{f: f, opts: opts, target: target, next: next, last: opts.AfterRevision, ch: make(chan Event, buffer)}
	go w.run(ctx, ended)
	return w.ch
}

func (w *fanWatch) run(ctx context.Context, ended func()) {
	defer close(w.ch)
	if ended != nil {
		defer ended()
	}
	defer w.leave()
	batch := make([]Event, 0, 64)
	for {
		var st fanState
		batch, st = w.f.take(w.next, batch[:0])
		if st.overrun || (st.ended && len(batch) == 0) {
			w.leave()
			reason := "ended"
			if st.overrun {
				reason = "slow"
			}
			sharedWatchersAlone.WithLabelValues(w.f.s.stream(), reason).Inc()
			w.alone(ctx)
			return
		}
		for _, ev := range batch {
			w.next++
			if ev.Revision <= w.last {
				continue
			}
			w.last = ev.Revision
			if w.wants(ev) && !w.send(ctx, ev) {
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		if !w.synced && w.caughtUp(ctx, st) {
			w.synced = true
			if !w.send(ctx, Event{Type: Synced, Revision: w.last}) {
				return
			}
			continue
		}
		select {
		case <-st.wake:
		case <-ctx.Done():
			return
		}
	}
}

// caughtUp says whether the watch, having read every change held, has
// passed the revision it must reach to be synced. A change the read has
// not reached may have been removed since (compacted, expired): once the
// read has nothing pending, the leader says whether one is left to come.
func (w *fanWatch) caughtUp(ctx context.Context, st fanState) bool {
	if w.last >= w.target {
		return true
	}
	if !st.idle || w.checked == st.reached {
		return false
	}
	w.checked = st.reached
	if ok, err := w.f.s.Reaches(ctx, st.reached, w.target); !ok || err != nil {
		return false
	}
	w.last = w.target
	return true
}

// wants says whether ev's key is in the watch's namespace or is its key,
// or ev is Progress and the watch asked for it.
func (w *fanWatch) wants(ev Event) bool {
	key := ev.Key
	switch {
	case ev.Type == Progress:
		return w.opts.Progress && w.opts.Key == "" && w.opts.Namespace == ""
	case w.opts.Key != "":
		return key == w.opts.Key
	case w.opts.Namespace != "":
		return strings.HasPrefix(key, w.opts.Namespace) && strings.HasPrefix(key[len(w.opts.Namespace):], ".")
	}
	return true
}

func (w *fanWatch) send(ctx context.Context, ev Event) bool {
	select {
	case w.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *fanWatch) leave() {
	if !w.left {
		w.left = true
		w.f.leave()
	}
}

// alone goes on with a read of the watch's own from where it was, when
// the fanout can no longer serve it.
func (w *fanWatch) alone(ctx context.Context) {
	opts := w.opts
	opts.AfterRevision = w.last
	for ev := range w.f.s.conn.watch(ctx, w.f.s.watchSpec(opts), 1, false, w.f.s.withProgress(func(m rawMsg, live bool) Event { return w.f.s.sharedEvent(m, live, nil) }, w.opts.Progress)) {
		if ev.Type == Synced && w.synced {
			continue
		}
		w.synced = w.synced || ev.Type == Synced
		if !w.send(ctx, ev) {
			return
		}
	}
}
