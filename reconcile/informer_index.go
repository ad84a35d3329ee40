package reconcile

import (
	"slices"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

// The informer's indexes, and what its watch may build changes over.

// prior is the cached object of key if it is at revision rev, for the
// watch to decode a change that kept its head over (bus.WatchOptions.Prior):
// what Keep leaves of an object keeps its metadata. None while a list
// afresh has not synced: until then the cache may hold a bucket made
// before this one, whose revisions the new one numbers again.
func (i *Informer) prior(key string, rev uint64) *object.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if !i.synced {
		return nil
	}
	e := i.items[key]
	if e == nil || e.obj == nil {
		return nil
	}
	if r, err := bus.Revision(e.obj.Metadata.ResourceVersion); err != nil || r != rev {
		return nil
	}
	return e.obj
}

func (i *Informer) indexAdd(name, key string, e *entry, vals []string) {
	for _, v := range vals {
		set := i.indexes[name][v]
		if set == nil {
			set = map[string]*entry{}
			i.indexes[name][v] = set
		}
		set[key] = e
	}
}

func (i *Informer) indexRemove(name, key string, vals []string) {
	for _, v := range vals {
		if set := i.indexes[name][v]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(i.indexes[name], v)
			}
		}
	}
}

// reindex moves key, held in e, from old's index values to o's (either
// nil for none), touching no set when they are the same, as for most
// changes: those sets hold e, changed in place.
func (i *Informer) reindex(key string, e *entry, old, o *object.Object, oldValue, value any) {
	for name, fn := range i.indexers {
		var before, after []string
		if old != nil {
			before = fn(old, oldValue)
		}
		if o != nil {
			after = fn(o, value)
		}
		if slices.Equal(before, after) {
			continue
		}
		i.indexRemove(name, key, before)
		i.indexAdd(name, key, e, after)
	}
}
