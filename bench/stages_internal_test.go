package bench

import (
	"fmt"
	"testing"
	"time"
)

// The stages say when the last pod passed each step, and each step's
// latency, from the times the watch saw.
func TestStagesOf(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	type pod struct {
		created, bound, running int // ms after start; bound -1 when the watch never saw it alone
	}
	cases := []struct {
		name string
		pods []pod
		want Stages
	}{
		{name: "none", want: Stages{}},
		{name: "one pod", pods: []pod{{10, 30, 100}}, want: Stages{
			FirstCreated: 10 * time.Millisecond, LastCreated: 10 * time.Millisecond, LastBound: 30 * time.Millisecond, LastRunning: 100 * time.Millisecond,
			BindP50: 20 * time.Millisecond, BindP99: 20 * time.Millisecond, StartP50: 70 * time.Millisecond, StartP99: 70 * time.Millisecond}},
		{name: "bind seen only with the status", pods: []pod{{10, -1, 50}}, want: Stages{
			FirstCreated: 10 * time.Millisecond, LastCreated: 10 * time.Millisecond, LastBound: 50 * time.Millisecond, LastRunning: 50 * time.Millisecond,
			BindP50: 40 * time.Millisecond, BindP99: 40 * time.Millisecond}},
		{name: "the last of each step is each its own pod's", pods: []pod{{7, 500, 510}, {300, 310, 320}, {5, 6, 900}}, want: Stages{
			FirstCreated: 5 * time.Millisecond, LastCreated: 300 * time.Millisecond, LastBound: 500 * time.Millisecond, LastRunning: 900 * time.Millisecond,
			BindP50: 10 * time.Millisecond, BindP99: 493 * time.Millisecond, StartP50: 10 * time.Millisecond, StartP99: 894 * time.Millisecond}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			created, bound, running := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
			for i, p := range c.pods {
				uid := fmt.Sprint(i)
				created[uid], running[uid] = at(p.created), at(p.running)
				if p.bound >= 0 {
					bound[uid] = at(p.bound)
				}
			}
			// A pod created but not yet running is not counted.
			created["pending"] = at(10_000)
			if got := stagesOf(start, created, bound, running); got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
