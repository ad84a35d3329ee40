package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/homeostat/homeostat/object"
)

const (
	// pageGets is how many of a page's objects are fetched at once.
	pageGets = 16
	// getCost is what one key's get costs, in values streamed.
	getCost = 16
)

// page serves one page of an unfiltered, limited list without reading the
// namespace's values: the stream's leader lists the keys that hold a
// message (names only), and the page's objects are fetched from it in
// key order, in batches of the page's size or sixteen, whichever is more
// (sixteen gets at once), passing over delete markers. A page of 500 out
// of 100,000 pods so reads 500 values, where a full read takes all of
// them, which is what a client paging through a large namespace (kubectl
// and client-go page by 500) would otherwise pay for every page.
//
// A key's get costs about as much as streaming sixteen values, so a page
// of more than a sixteenth of the namespace's keys is left to the full
// read, and page answers false; so is one that meets so many delete
// markers that its gets pass a sixteenth of the keys.
//
// It holds what List promises: the revision, confirmed by a write before
// the keys are listed (see confirm.go), covers every write acknowledged
// before the list began, and the keys come from an answer that holds it;
// a key
// written after it may be read at a later revision, which a watch from
// the revision delivers again. Remaining counts the keys after the page,
// delete markers not yet compacted among them, so it may run a little
// high, as Kubernetes allows of remainingItemCount.
//
// The pages after the first read the keys the first one listed, while
// the store remembers them (pagedKeys): listing every key of a namespace
// for each page made paging through N keys read N²/limit names, 100 ms a
// page at 20,000. So a continued list holds the objects that held a value
// when its first page was read, as a Kubernetes list continued at its
// first page's resourceVersion does, less those deleted since; a list
// continued after the store forgot its keys lists them again, and then
// also holds objects made since.
func (s *Store) page(ctx context.Context, filter string, opts ListOptions, tok continueToken, conf *confirmation) (*ListResult, bool, error) {
	rev := tok.Revision
	keys := s.pages.get(filter, rev, s.now())
	if keys == nil {
		upTo, err := conf.get(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
		}
		subjects, err := s.conn.subjects(ctx, s.stream(), filter, upTo)
		if err != nil {
			return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
		}
		if opts.Limit*getCost >= len(subjects) {
			return nil, false, nil
		}
		keys = make([]string, 0, len(subjects))
		for subject := range subjects {
			keys = append(keys, subject[len(s.subjPrefix):])
		}
		sort.Strings(keys)
		if rev == 0 {
			rev = upTo
		}
		s.pages.put(filter, rev, keys, s.now())
	}
	total := len(keys)
	if opts.Limit*getCost >= total {
		return nil, false, nil
	}
	if i, found := slices.BinarySearch(keys, tok.After); found {
		keys = keys[i+1:]
	} else {
		keys = keys[i:]
	}
	out := &ListResult{Revision: rev}
	shared := opts.Shared
	next, last := 0, -1 // the next key to fetch; the page's last item's
	for next < len(keys) && len(out.Items) < opts.Limit {
		// Past this many gets, delete markers make the full read cheaper.
		if next > total/getCost {
			return nil, false, nil
		}
		batch := keys[next:min(len(keys), next+max(opts.Limit-len(out.Items), pageGets))]
		evs, err := s.fetchKeys(ctx, batch, shared)
		if err != nil {
			return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
		}
		for i, ev := range evs {
			if len(out.Items) == opts.Limit {
				break
			}
			switch ev.Type {
			case Added, Modified:
				out.Items = append(out.Items, ev.Object)
				if shared {
					out.JSON = append(out.JSON, ev.JSON())
				}
				last = next + i
			case Corrupt:
				var ce *CorruptError
				if errors.As(ev.Err, &ce) {
					out.Corrupt = append(out.Corrupt, ce)
				}
			}
		}
		next += len(batch)
	}
	if rest := len(keys) - (last + 1); len(out.Items) == opts.Limit && rest > 0 {
		out.Remaining = int64(rest)
		out.Continue = encodeContinue(continueToken{Revision: out.Revision, After: keys[last]})
	}
	return out, true, nil
}

// pagedKeys remembers the sorted keys that the first pages of recent
// lists paged from the store found, by filter and the list's revision, for
// the pages after them: at most pagedListsKept lists, each for
// pagedListKeep after its first page.
type pagedKeys struct {
	mu    sync.Mutex
	lists []pagedList // oldest first
}

type pagedList struct {
	filter string
	rev    uint64
	keys   []string
	at     time.Time
}

const (
	pagedListsKept = 4
	pagedListKeep  = 2 * time.Minute
)

// get is the keys of the list of filter at rev, nil when none is
// remembered (or rev is 0: a first page).
func (p *pagedKeys) get(filter string, rev uint64, now time.Time) []string {
	if rev == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lists {
		if l.filter == filter && l.rev == rev && now.Sub(l.at) < pagedListKeep {
			return l.keys
		}
	}
	return nil
}

// put remembers the keys of the list of filter at rev, forgetting the
// oldest list beyond pagedListsKept and those kept too long.
func (p *pagedKeys) put(filter string, rev uint64, keys []string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lists = slices.DeleteFunc(p.lists, func(l pagedList) bool {
		return now.Sub(l.at) >= pagedListKeep || l.filter == filter && l.rev == rev
	})
	if len(p.lists) == pagedListsKept {
		p.lists = slices.Delete(p.lists, 0, 1)
	}
	p.lists = append(p.lists, pagedList{filter: filter, rev: rev, keys: keys, at: now})
}

// fetchKeys reads the latest message of each key from the stream's
// leader, pageGets at a time, and gives their events in the keys' order;
// a key holding a delete marker, or none any more, gives a Deleted event.
func (s *Store) fetchKeys(ctx context.Context, keys []string, shared bool) ([]Event, error) {
	evs := make([]Event, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, pageGets)
	var wg sync.WaitGroup
	for i, key := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
			if errors.Is(err, ErrNotFound) {
				evs[i] = Event{Type: Deleted, Key: key}
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			raw := rawMsg{subject: m.subject, header: m.header, data: m.data, seq: m.seq, time: m.time}
			if shared {
				evs[i] = s.sharedEvent(raw, false, nil)
			} else {
				evs[i] = s.toEvent(raw, false, nil)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// listablePage says whether a list is served by page: it is limited and
// takes every object of the namespace.
func listablePage(opts ListOptions) bool {
	return opts.Limit > 0 && opts.Under == "" && opts.Selector.Empty()
}

// CatchUp brings objects held in memory, by key, that reflect every
// message of the store up to after (an informer's cache, which has
// applied each message it was delivered, in order) to the store's
// present: it reads from the stream's leader each message after after,
// in order, until none follows, and applies it to items (a value
// replaces, a delete marker removes). It returns the revision items then
// reflect: at least upTo, a revision LastRevision gave before the
// caller's list began, so it covers every write acknowledged before
// that. The stream holds a message at upTo or later (the confirmation's,
// or one after it), so an answer that none follows before the read has
// reached upTo came from a leader cut off from its peers (see
// confirm.go), and is asked again.
//
// A watch passes over a message that a later write of its key replaced
// before the watch reached it; so a cache that has reached a revision may
// still lack a write at or below it, whose key was written again after
// it. That write's key then holds a message after the cache's revision,
// which CatchUp applies.
//
// It answers false, leaving items part-way, when more than most messages
// follow or one holds no valid object: the caller reads the store.
func (s *Store) CatchUp(ctx context.Context, items map[string]*object.Object, after, upTo uint64, most int) (uint64, bool, error) {
	for n := 0; ; n++ {
		m, err := s.nextOf(ctx, after, upTo)
		if errors.Is(err, ErrNotFound) {
			return after, true, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("bus: catching up on %s: %w", s.spec.Resource, err)
		}
		if n == most {
			return 0, false, nil
		}
		raw := rawMsg{subject: m.subject, header: m.header, data: m.data, seq: m.seq, time: m.time}
		if s.isConfirmation(raw) {
			after = m.seq
			continue
		}
		ev := s.sharedEvent(raw, true, nil)
		switch ev.Type {
		case Added, Modified:
			items[ev.Key] = ev.Object
		case Deleted:
			delete(items, ev.Key)
		default:
			return 0, false, nil
		}
		after = m.seq
	}
}

// nextOf is the stream's first message after after, of a key or a
// confirmation, from an answer that has reached upTo: ErrNotFound when
// none follows, past upTo.
func (s *Store) nextOf(ctx context.Context, after, upTo uint64) (*storedMsg, error) {
	var m *storedMsg
	err := retried(ctx, func(ctx context.Context) error {
		var err error
		m, err = s.conn.leaderGet(ctx, s.stream(), msgGetRequest{Seq: after + 1, NextFor: wholeStream})
		if errors.Is(err, ErrNotFound) && after < upTo {
			return errBehind
		}
		return err
	})
	return m, err
}
