package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

func historyOf(t *testing.T, conn *bus.Conn, key string) []reconcile.HistoryEntry {
	t.Helper()
	h, err := conn.History(context.Background(), bus.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []reconcile.HistoryEntry
	err = h.Read(context.Background(), widgets.Resource, key, time.Time{}, func(data []byte) error {
		var e reconcile.HistoryEntry
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func outcomes(es []reconcile.HistoryEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Outcome)
	}
	return out
}

// TestHistoryRecordsEachReconcile: every reconcile leaves an entry on its
// object with its controller, worker, attempt, trace and duration: one
// that wrote says what it changed, one that failed says why, one that
// asked to come back says when, and one that ran long was first recorded
// as in progress, on its worker.
func TestHistoryRecordsEachReconcile(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	release := make(chan struct{})
	rec := &recorder{}
	rec.fn = func(ctx context.Context, req reconcile.Request, n int) (reconcile.Result, error) {
		switch {
		case req.Name == "writer" && n == 1:
			child := widget("writer-child")
			if _, err := s.Create(ctx, child); err != nil {
				return reconcile.Result{}, err
			}
		case req.Name == "failing" && n == 1:
			return reconcile.Result{}, errors.New("the disk is full")
		case req.Name == "requeued" && n == 1:
			return reconcile.Result{RequeueAfter: time.Hour}, nil
		case req.Name == "slow" && n == 1:
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return reconcile.Result{}, nil
	}
	start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1,
		Backoff: reconcile.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}})
	for _, name := range []string{"writer", "failing", "requeued", "slow"} {
		if _, err := s.Create(context.Background(), widget(name)); err != nil {
			t.Fatal(err)
		}
	}

	poll.Until(t, "the slow reconcile recorded as in progress", 20*time.Second, func() bool {
		es := historyOf(t, conn, "default.slow")
		return len(es) == 1 && es[0].Outcome == reconcile.OutcomeInProgress && es[0].Worker != ""
	})
	close(release)

	var es []reconcile.HistoryEntry
	poll.Until(t, "the writer's entries", 20*time.Second, func() bool {
		es = historyOf(t, conn, "default.writer")
		return len(es) >= 1
	})
	w := es[0]
	if w.Outcome != reconcile.OutcomeChanged || len(w.Changes) != 1 || w.Changes[0].Verb != bus.VerbCreated ||
		w.Changes[0].Resource != widgets.Resource || w.Changes[0].Count != 1 || w.Changes[0].Keys[0] != "default.writer-child" {
		t.Fatalf("the writer's entry: %+v", w)
	}
	if w.Controller != "widgets" || w.Kind != "Widget" || w.Attempt != 1 || w.Revision == 0 || len(w.TraceID) != 32 || w.Worker == "" || w.DurationMS <= 0 {
		t.Fatalf("the writer's entry lacks what it must say: %+v", w)
	}
	poll.Until(t, "the failed reconcile and its retry", 20*time.Second, func() bool {
		es = historyOf(t, conn, "default.failing")
		return len(es) >= 2
	})
	if es[0].Outcome != reconcile.OutcomeError || es[0].Error != "the disk is full" || es[1].Outcome != reconcile.OutcomeUnchanged || es[1].Attempt != 2 {
		t.Fatalf("the failing widget's history: %+v", es)
	}
	poll.Until(t, "the requeue", 20*time.Second, func() bool {
		es = historyOf(t, conn, "default.requeued")
		return len(es) >= 1
	})
	if es[0].Outcome != reconcile.OutcomeRequeue || es[0].RequeueAfter != "1h0m0s" {
		t.Fatalf("the requeued widget's history: %+v", es)
	}
	poll.Until(t, "the slow reconcile's end", 20*time.Second, func() bool {
		es = historyOf(t, conn, "default.slow")
		return len(es) == 2
	})
	if got := outcomes(es); got[0] != reconcile.OutcomeInProgress || got[1] != reconcile.OutcomeUnchanged || es[1].DurationMS < 1000 {
		t.Fatalf("the slow widget's history: %+v", es)
	}
}

// TestNoHistoryRecordsNothing: a manager told to keep no history leaves no
// entry. Another manager's entry, published later on the same connection,
// is read first, so one left by the first would be readable by then.
func TestNoHistoryRecordsNothing(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	quiet := &recorder{}
	r := startWith(t, reconcile.ManagerOptions{Bus: conn, DrainTimeout: 5 * time.Second, Identity: "quiet", NoHistory: true},
		reconcile.Options{Reconciler: quiet, Resync: -1})
	if _, err := s.Create(context.Background(), widget("quiet")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the quiet widget reconciled", 20*time.Second, func() bool { return quiet.count("default.quiet") >= 1 })
	r.stop()

	start(t, conn, reconcile.Options{Reconciler: &recorder{}, Resync: -1})
	if _, err := s.Create(context.Background(), widget("loud")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the loud widget's entry", 20*time.Second, func() bool { return len(historyOf(t, conn, "default.loud")) >= 1 })
	for _, e := range historyOf(t, conn, "default.quiet") {
		if e.Worker == "quiet" {
			t.Fatalf("a manager without history recorded %+v", e)
		}
	}
}
