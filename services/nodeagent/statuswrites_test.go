package nodeagent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// recordingWriter is a countingWriter that says when a write arrives
// and holds it until the test lets it go.
type recordingWriter struct {
	countingWriter
	arrived chan struct{}
	proceed chan struct{}
}

func (r *recordingWriter) UpdateStatus(ctx context.Context, pod, current *object.Object) (*object.Object, error) {
	select {
	case r.arrived <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.proceed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.countingWriter.UpdateStatus(ctx, pod, current)
}

// TestStatusWritesWriteTheLatestReport: a status reported while the
// writer writes an earlier one is written next, and one reported as the
// writer returns is written by the writer the loop starts then; statuses
// passed over while a write was held are not written at all.
func TestStatusWritesWriteTheLatestReport(t *testing.T) {
	rec := &recordingWriter{arrived: make(chan struct{}), proceed: make(chan struct{})}
	a := &Agent{cfg: Config{NodeName: "n1", Address: "127.0.0.1"}, log: slog.Default(), write: rec, read: rec}
	pod := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p", Namespace: "default", UID: "u1", ResourceVersion: "1"}}
	p, err := kinds.DecodePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	w := newPodWorker(a, p.Key(), p, trace.SpanContext{})
	ended := make(chan struct{}, 1)
	s := statusWrites{ended: func() { ended <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); s.wg.Wait() }()

	w.report(kinds.PodStatus{Phase: kinds.PodPending})
	s.start(ctx, w)
	within(t, "write of Pending", rec.arrived) // the writer writes Pending…
	w.report(kinds.PodStatus{Phase: kinds.PodRunning})
	w.report(kinds.PodStatus{Phase: kinds.PodSucceeded})
	s.start(ctx, w) // …and one runs: no second writer
	rec.proceed <- struct{}{}
	within(t, "write of the latest status", rec.arrived) // Succeeded, not Running
	rec.proceed <- struct{}{}
	poll.Until(t, "the writer returned", 10*time.Second, func() bool { return len(ended) == 1 })

	// Reported after the writer's last look, before the loop heard it end.
	w.report(kinds.PodStatus{Phase: kinds.PodFailed})
	s.start(ctx, w) // the loop hears the report first: a writer still runs
	<-ended
	s.running = false
	s.start(ctx, w) // then that the writer ended: a new one writes Failed
	within(t, "write of the status reported as the writer returned", rec.arrived)
	rec.proceed <- struct{}{}
	poll.Until(t, "the last report written", 10*time.Second, func() bool { return len(rec.written()) == 3 })
	got := rec.written()
	want := []string{kinds.PodPending, kinds.PodSucceeded, kinds.PodFailed}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("written %v, want %v", got, want)
		}
	}
}

// within waits for ch, failing the test after ten seconds.
func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
	}
}
