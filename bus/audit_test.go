package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

func readAudit(t *testing.T, log *bus.AuditLog, verb string, since time.Time) []string {
	t.Helper()
	var out []string
	if err := log.Read(context.Background(), verb, since, func(b []byte) error { out = append(out, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The audit log keeps one record per id, in order, read by verb and from
// a time; its bounds follow the options it is opened with.
func TestAuditLog(t *testing.T) {
	ctx := context.Background()
	c := bustest.Conn(t)
	log, err := c.AuditLog(ctx, bus.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAudit(t, log, "", time.Time{}); len(got) != 0 {
		t.Fatalf("a new log holds %v", got)
	}
	for i, verb := range []string{"create", "delete", "create", "weird.verb>*"} {
		if err := log.Append(ctx, verb, fmt.Sprint("id-", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Append(ctx, "create", "id-0", []byte("again")); err != nil { // a retried append
		t.Fatal(err)
	}
	mid := time.Now()
	if err := log.Append(ctx, "patch", "id-4", []byte("4")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verb  string
		since time.Time
		want  string
	}{
		{"", time.Time{}, "[0 1 2 3 4]"},
		{"create", time.Time{}, "[0 2]"},
		{"weird.verb>*", time.Time{}, "[3]"},
		{"", mid, "[4]"},
		{"create", mid, "[]"},
		{"", time.Now().Add(time.Hour), "[]"},
	} {
		if got := fmt.Sprint(readAudit(t, log, c.verb, c.since)); got != c.want {
			t.Errorf("Read(%q, %v) = %s, want %s", c.verb, c.since, got, c.want)
		}
	}
	// Opened again with other bounds, the log keeps its records under them.
	if _, err := c.AuditLog(ctx, bus.AuditOptions{MaxAge: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(readAudit(t, log, "", time.Time{})); got != "[0 1 2 3 4]" {
		t.Fatalf("after re-bounding: %s", got)
	}
	if got := bus.StreamMaxAge(t, c, "HS_AUDIT"); got != time.Hour {
		t.Fatalf("max age after re-bounding: %v, want 1h", got)
	}
}
