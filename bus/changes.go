package bus

import (
	"context"
	"maps"
	"sync"
)

// Changes collects what the writes made through a context changed,
// summed by verb and resource: the reconcile runtime gives each reconcile
// one, so that its history says what it did ("created 10000 pods") in a
// few lines however many writes it made. It is safe for concurrent use.
//
// It also keeps the latest revision written to each resource, so that
// whoever made the writes can wait for a cache to show them all.
type Changes struct {
	mu      sync.Mutex
	summary []ChangeSummary
	latest  map[string]uint64
}

// ChangeSummary is the writes of one verb to one resource.
type ChangeSummary struct {
	// Verb is created, updated, updated status or deleted.
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Count    int    `json:"count"`
	// Keys are the first few keys written.
	Keys []string `json:"keys"`
}

// Verbs of ChangeSummary.
const (
	VerbCreated       = "created"
	VerbUpdated       = "updated"
	VerbUpdatedStatus = "updated status"
	VerbDeleted       = "deleted"
)

// changeKeysKept is how many keys a summary names.
const changeKeysKept = 3

type changesKey struct{}

// WithChanges returns ctx whose writes through the bus's stores are
// added to c.
func WithChanges(ctx context.Context, c *Changes) context.Context {
	return context.WithValue(ctx, changesKey{}, c)
}

func changesOf(ctx context.Context) *Changes {
	c, _ := ctx.Value(changesKey{}).(*Changes)
	return c
}

// add counts one write, stored at rev.
func (c *Changes) add(verb, resource, key string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > c.latest[resource] {
		if c.latest == nil {
			c.latest = map[string]uint64{}
		}
		c.latest[resource] = rev
	}
	for i := range c.summary {
		s := &c.summary[i]
		if s.Verb == verb && s.Resource == resource {
			s.Count++
			if len(s.Keys) < changeKeysKept {
				s.Keys = append(s.Keys, key)
			}
			return
		}
	}
	c.summary = append(c.summary, ChangeSummary{Verb: verb, Resource: resource, Count: 1, Keys: []string{key}})
}

// Summary is what was changed, in the order first changed; nil when
// nothing was.
func (c *Changes) Summary() []ChangeSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ChangeSummary, len(c.summary))
	for i, s := range c.summary {
		s.Keys = append([]string(nil), s.Keys...)
		out[i] = s
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Latest is the latest revision written to each resource (its stream's
// sequence); nil when nothing was written.
func (c *Changes) Latest() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.latest)
}

// noteWrite adds a write that landed at rev to the changes ctx collects,
// if any.
func (s *Store) noteWrite(ctx context.Context, verb, key string, rev uint64) {
	if c := changesOf(ctx); c != nil {
		c.add(verb, s.spec.Resource, key, rev)
	}
}
