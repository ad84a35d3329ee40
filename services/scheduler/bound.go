package scheduler

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// boundSpec is spec, a pod's spec as stored, with nodeName set to node,
// written as a member added after the others, which keep their bytes.
// Encoding the decoded spec again for each bind was a sixth of what a
// bind cost the scheduler. False when spec is not a JSON object, or may
// name nodeName anywhere (a member given empty, in another case, a string
// that holds it, or any escape), for the caller to encode the spec whole:
// a second nodeName member would make a spec whose readers disagree
// (kinds.BoundNode takes the first, the decoders the last).
func boundSpec(spec []byte, node string) ([]byte, bool) {
	s := bytes.TrimSpace(spec)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || bytes.IndexByte(s, '\\') >= 0 || containsFold(s, nodeNameWord) {
		return nil, false
	}
	body := bytes.TrimSpace(s[1 : len(s)-1])
	out := make([]byte, 0, len(s)+len(`,"nodeName":""`)+len(node)+8)
	out = append(out, '{')
	if len(body) > 0 {
		out = append(append(out, body...), ',')
	}
	out = append(out, `"nodeName":`...)
	out, err := jsontext.AppendQuote(out, node)
	if err != nil {
		return nil, false
	}
	return append(out, '}'), true
}

var nodeNameWord = []byte("nodename")

// containsFold reports whether s holds word (lower case ASCII) in any
// case.
func containsFold(s, word []byte) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && bytes.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// scheduledStatuses remembers the status a bind wrote for the status a
// pod came with, in the second it was written: the pods of a ReplicaSet
// arrive with one status, and the status a bind writes depends on nothing
// else, so binding a thousand pods in a second encodes it once, not a
// thousand times. The bytes it gives are shared, and so never changed
// (their capacity is their length: an append copies them).
type scheduledStatuses struct {
	mu   sync.Mutex
	from []byte    // the status bound from, as stored
	at   time.Time // the second the status was made in
	to   []byte
}

// status is the status a bind at now writes over p's, where p is a pod
// as decoded from its stored form, whose status is p.Object.Status: its
// phase Pending when it had none, and PodScheduled true.
func (c *scheduledStatuses) status(p *kinds.Pod, now time.Time) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.to != nil && c.at.Equal(now) && bytes.Equal(c.from, p.Object.Status) {
		return c.to, nil
	}
	to, err := scheduledStatus(p.Status, now)
	if err != nil {
		return nil, err
	}
	c.from, c.at, c.to = bytes.Clone(p.Object.Status), now, to[:len(to):len(to)]
	return c.to, nil
}

// scheduledStatus encodes status as a bind at now leaves it; status is
// not changed (its conditions may be the informer's).
func scheduledStatus(status kinds.PodStatus, now time.Time) ([]byte, error) {
	status.Conditions = slices.Clone(status.Conditions)
	object.SetCondition(&status.Conditions, object.Condition{Type: kinds.PodScheduled, Status: object.ConditionTrue}, now)
	if status.Phase == "" {
		status.Phase = kinds.PodPending
	}
	var o object.Object
	if err := o.SetStatus(status); err != nil {
		return nil, err
	}
	return o.Status, nil
}
