package api

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
)

// TestDropIdle: the caches last used before the cut-off are stopped and
// forgotten, those used since and those not yet running are kept; a zero
// cut-off (the API stopping) drops every one.
func TestDropIdle(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	type entry struct {
		name    string
		usedAgo time.Duration
		running bool
	}
	entries := []entry{
		{"used long ago", time.Hour, true},
		{"used just before the cut-off", 10*time.Minute + time.Nanosecond, true},
		{"used at the cut-off", 10 * time.Minute, true},
		{"used since", time.Second, true},
		{"not yet running", time.Hour, false},
	}
	for _, tc := range []struct {
		name  string
		since time.Time
		kept  []string
	}{
		{"ten minutes idle", now.Add(-10 * time.Minute), []string{"used at the cut-off", "used since", "not yet running"}},
		{"the API stops", time.Time{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newListCaches(slog.Default(), 0)
			names := map[*bus.Store]string{}
			stopped := map[string]bool{}
			for _, e := range entries {
				st := &bus.Store{}
				names[st] = e.name
				lc := &listCache{used: now.Add(-e.usedAgo)}
				if e.running {
					_, cancel := context.WithCancel(context.Background())
					lc.stop = func() { stopped[e.name] = true; cancel() }
				}
				c.byRes[st] = lc
				listCachesHeld.Inc()
			}
			c.dropIdle(tc.since)
			var kept []string
			for st := range c.byRes {
				kept = append(kept, names[st])
			}
			slices.Sort(kept)
			want := slices.Sorted(slices.Values(tc.kept))
			if !slices.Equal(kept, want) {
				t.Fatalf("kept %q, want %q", kept, want)
			}
			for _, e := range entries {
				if dropped := !slices.Contains(want, e.name); dropped != stopped[e.name] && e.running {
					t.Errorf("%s: dropped %v, stopped %v", e.name, dropped, stopped[e.name])
				}
			}
			c.dropIdle(time.Time{})
		})
	}
}

// TestStoppedCachesStartNone: once the API's caches are stopped, a list
// (one still in flight as the API stops) starts none that nothing would
// run or drop.
func TestStoppedCachesStartNone(t *testing.T) {
	c := newListCaches(slog.Default(), 0)
	c.stop()
	if inf := c.informer(nil, &bus.Store{}, true); inf != nil || len(c.byRes) != 0 {
		t.Fatalf("after stop: informer %v, %d caches held", inf, len(c.byRes))
	}
}
