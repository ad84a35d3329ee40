package scheduler

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A queue emptied after holding many pods is made anew (its maps keep
// the room they grew to otherwise); one that held few, or that still
// holds one, is not.
func TestQueueMadeAnewOnceDrained(t *testing.T) {
	ctx := context.Background()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	for _, tc := range []struct {
		name  string
		pods  int
		left  int // pods still parked at the end
		anew  bool
		order bool // popped pods are bound (removed) after all were popped
	}{
		{"a burst, bound as popped", drainedRoom + 10, 0, true, false},
		{"a burst, bound after", drainedRoom + 10, 0, true, true},
		{"a few", 10, 0, false, false},
		{"a burst with one left parked", drainedRoom + 10, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue()
			traces := reflect.ValueOf(q.traces).UnsafePointer()
			for i := range tc.pods {
				q.add(fmt.Sprint("p", i), sc)
			}
			var popped []string
			for i := range tc.pods {
				k, got, ok := q.pop(ctx)
				if !ok || !got.Equal(sc) {
					t.Fatalf("popped %q with trace %v", k, got)
				}
				switch {
				case i < tc.left:
					q.park(k) // unschedulable for now
				case tc.order:
					popped = append(popped, k)
				default:
					q.remove(k)
				}
			}
			for _, k := range popped {
				q.remove(k)
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			if len(q.active) != 0 || len(q.inActive) != 0 || len(q.traces) != tc.left || len(q.parked) != tc.left {
				t.Fatalf("active %d, marked %d, traces %d, parked %d, want %d parked with their traces", len(q.active), len(q.inActive), len(q.traces), len(q.parked), tc.left)
			}
			if anew := reflect.ValueOf(q.traces).UnsafePointer() != traces; anew != tc.anew {
				t.Fatalf("made anew: %v, want %v", anew, tc.anew)
			}
		})
	}
}
