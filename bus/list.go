package bus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/homeostat/homeostat/object"
)

// ListOptions tune List.
type ListOptions struct {
	Namespace string
	Selector  object.Selector
	// Limit caps the page size; 0 means everything.
	Limit int
	// Continue is the token of the previous page.
	Continue string
}

// ListResult is one page of a list.
type ListResult struct {
	Items []*object.Object
	// Revision is the bucket's revision when the list began; a watch that
	// resumes after it misses nothing.
	Revision uint64
	// Continue is set when more items follow.
	Continue string
	// Remaining counts items after this page.
	Remaining int64
}

type continueToken struct {
	Revision uint64 `json:"rv"`
	After    string `json:"after"`
}

// List returns live objects in key order. Later pages of a paginated list
// are read afresh and carry the first page's revision: each page is current,
// and watching from that revision catches up on anything the pages missed.
func (s *Store) List(ctx context.Context, opts ListOptions) (*ListResult, error) {
	var tok continueToken
	if opts.Continue != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Continue)
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: continue token is malformed", ErrInvalid)
		}
	}
	rev, err := s.LastRevision(ctx)
	if err != nil {
		return nil, err
	}
	if tok.Revision != 0 {
		rev = tok.Revision
	}
	items, err := s.snapshot(ctx, opts.Namespace)
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key() < items[j].Key() })
	out := &ListResult{Revision: rev}
	for _, o := range items {
		if tok.After != "" && o.Key() <= tok.After {
			continue
		}
		if !opts.Selector.Matches(o.Metadata.Labels) {
			continue
		}
		if opts.Limit > 0 && len(out.Items) == opts.Limit {
			out.Remaining++
			continue
		}
		out.Items = append(out.Items, o)
	}
	if out.Remaining > 0 {
		last := out.Items[len(out.Items)-1].Key()
		raw, _ := json.Marshal(continueToken{Revision: rev, After: last})
		out.Continue = base64.RawURLEncoding.EncodeToString(raw)
	}
	return out, nil
}

// snapshot reads every live object of a namespace (or all) through a watch
// that stops at the end of the initial state.
func (s *Store) snapshot(ctx context.Context, namespace string) ([]*object.Object, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(ctx, WatchOptions{Namespace: namespace, Buffer: 1024})
	if err != nil {
		return nil, err
	}
	var items []*object.Object
	for ev := range ch {
		switch ev.Type {
		case Added:
			items = append(items, ev.Object)
		case Synced:
			return items, nil
		case Failed:
			return nil, ev.Err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: list of %s ended early", ErrUnavailable, s.spec.Bucket)
}

// LastRevision is the bucket's latest revision.
func (s *Store) LastRevision(ctx context.Context) (uint64, error) {
	stream, err := s.conn.JS.Stream(ctx, s.Stream())
	if err != nil {
		return 0, translate(err)
	}
	return stream.CachedInfo().State.LastSeq, nil
}
