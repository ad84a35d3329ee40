package bus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

const (
	// pageGets is how many of a page's objects are fetched at once.
	pageGets = 16
	// getCost is what one key's get costs, in values streamed.
	getCost = 16
)

// page serves one page of an unfiltered, limited list without reading the
// namespace's values: the stream's leader lists the keys that hold a
// message (names only), and the page's objects are fetched from it one
// key at a time, in key order, passing over delete markers. A page of 500
// out of 100,000 pods so reads 500 values, where a full read takes all of
// them, which is what a client paging through a large namespace (kubectl
// and client-go page by 500) would otherwise pay for every page.
//
// A key's get costs about as much as streaming sixteen values, so a page
// of more than a sixteenth of the namespace's keys is left to the full
// read, and page answers false.
//
// It holds what List promises: the revision, taken before the keys are
// listed, covers every write acknowledged before the list began; a key
// written after it may be read at a later revision, which a watch from
// the revision delivers again. Remaining counts the keys after the page,
// delete markers not yet compacted among them, so it may run a little
// high, as Kubernetes allows of remainingItemCount.
func (s *Store) page(ctx context.Context, filter string, opts ListOptions, tok continueToken) (*ListResult, bool, error) {
	upTo, err := s.conn.lastSeq(ctx, s.stream())
	if err != nil {
		return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
	}
	subjects, err := s.conn.subjects(ctx, s.stream(), filter)
	if err != nil {
		return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
	}
	if opts.Limit*getCost >= len(subjects) {
		return nil, false, nil
	}
	keys := make([]string, 0, len(subjects))
	for subject := range subjects {
		if key := subject[len(s.subjPrefix):]; key > tok.After {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	out := &ListResult{Revision: upTo}
	if tok.Revision != 0 {
		out.Revision = tok.Revision
	}
	shared := opts.Shared
	next := 0
	for next < len(keys) && len(out.Items) < opts.Limit {
		batch := keys[next:min(len(keys), next+opts.Limit-len(out.Items))]
		next += len(batch)
		evs, err := s.fetchKeys(ctx, batch, shared)
		if err != nil {
			return nil, false, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case Added, Modified:
				out.Items = append(out.Items, ev.Object)
				if shared {
					out.JSON = append(out.JSON, ev.JSON())
				}
			case Corrupt:
				var ce *CorruptError
				if errors.As(ev.Err, &ce) {
					out.Corrupt = append(out.Corrupt, ce)
				}
			}
		}
	}
	if rest := len(keys) - next; rest > 0 && len(out.Items) > 0 {
		out.Remaining = int64(rest)
		out.Continue = encodeContinue(continueToken{Revision: out.Revision, After: out.Items[len(out.Items)-1].Key()})
	}
	return out, true, nil
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
				evs[i] = s.sharedEvent(raw, false)
			} else {
				evs[i] = s.toEvent(raw, false)
			}
		}()
	}
	wg.Wait()
	return evs, errors.Join(errs...)
}

// listablePage says whether a list is served by page: it is limited and
// takes every object of the namespace.
func listablePage(opts ListOptions) bool {
	return opts.Limit > 0 && opts.Under == "" && opts.Selector.Empty()
}
