package object

import (
	"testing"
	"time"
	"unsafe"
)

// Equal lists of conditions are one list, unequal ones in any field are
// not, long lists are left as they are, and a shared list has no room to
// grow.
func TestShareConditions(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ready := func(change func(*Condition)) []Condition {
		c := Condition{Type: "Ready", Status: ConditionTrue, LastTransitionTime: at, Reason: "r", Message: "m", ObservedGeneration: 2}
		if change != nil {
			change(&c)
		}
		return append(make([]Condition, 0, 4), c)
	}
	first := ShareConditions(ready(nil))
	if cap(first) != len(first) {
		t.Fatalf("a shared list has room to grow: cap %d, len %d", cap(first), len(first))
	}
	same := func(a, b []Condition) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }
	if !same(ShareConditions(ready(nil)), first) {
		t.Fatal("an equal list was not the one kept")
	}
	for name, change := range map[string]func(*Condition){
		"type":            func(c *Condition) { c.Type = "Other" },
		"status":          func(c *Condition) { c.Status = ConditionFalse },
		"generation":      func(c *Condition) { c.ObservedGeneration = 3 },
		"transition":      func(c *Condition) { c.LastTransitionTime = at.Add(time.Nanosecond) },
		"zone":            func(c *Condition) { c.LastTransitionTime = at.In(time.FixedZone("east", 3600)) },
		"update":          func(c *Condition) { c.LastUpdateTime = at },
		"heartbeat":       func(c *Condition) { c.LastHeartbeatTime = at },
		"reason":          func(c *Condition) { c.Reason = "" },
		"message":         func(c *Condition) { c.Message = "m2" },
		"strings' bounds": func(c *Condition) { c.Reason, c.Message = "rm", "" },
	} {
		if got := ShareConditions(ready(change)); same(got, first) {
			t.Errorf("a list differing in its %s was given the kept one", name)
		}
	}
	long := func() []Condition {
		return append(ready(nil), ready(nil)[0], ready(nil)[0], ready(nil)[0], ready(nil)[0])
	}
	kept := ShareConditions(long())
	if again := long(); !same(ShareConditions(again), again) || same(again, kept) {
		t.Fatal("a list longer than the most shared was shared")
	}
	if got := ShareConditions(nil); got != nil {
		t.Fatal("no conditions became some")
	}
}
