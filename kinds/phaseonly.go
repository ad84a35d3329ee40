package kinds

import (
	stdjson "encoding/json"
	"unsafe"

	"github.com/homeostat/homeostat/object"
)

// phaseStatuses are the statuses PhaseOnly gives, one shared copy for
// each phase a pod may have ("" when its status names none).
var phaseStatuses = func() map[string]stdjson.RawMessage {
	m := map[string]stdjson.RawMessage{}
	for _, p := range []string{"", PodPending, PodRunning, PodSucceeded, PodFailed, PodUnknown} {
		b := []byte(`{}`)
		if p != "" {
			b = []byte(`{"phase":"` + p + `"}`)
		}
		m[p] = b[:len(b):len(b)] // no room: an append copies
	}
	return m
}()

// knownPhase is phase as this package's constant when it names one, so
// that a cache holds no copy of it for each pod.
func knownPhase(phase string) string {
	for _, p := range [...]string{PodRunning, PodPending, PodSucceeded, PodFailed, PodUnknown} {
		if phase == p {
			return p
		}
	}
	return phase
}

// PhaseOnly is what a cache keeps of a pod whose readers need no more of
// its status than its phase (the scheduler, of a bound pod, with
// PodPhaseAfter): a copy of o whose status is its phase alone. An agent's
// conditions and container statuses are three quarters of a running
// pod's JSON. A pod whose status does not read, or names a phase this
// package does not, is o itself. A copy is never written back, since its
// status is not the stored one: IsPhaseOnly tells it apart.
func PhaseOnly(o *object.Object) *object.Object { return PhaseOnlyOf(o, nil) }

// PhaseOnlyOf is PhaseOnly(o) for a cache that has decoded o: p, when
// not nil, is o as decoded, whose phase is read instead of o's status
// (reading it again from the JSON was a twentieth of what the scheduler
// spent on a pod).
func PhaseOnlyOf(o *object.Object, p *Pod) *object.Object {
	if o == nil || len(o.Status) == 0 {
		return o
	}
	var phase string
	ok := true
	if p != nil && p.Object == o {
		phase = p.Status.Phase
	} else {
		phase, ok = topString(o.Status, "phase", false)
	}
	lean, known := phaseStatuses[phase]
	if !ok || !known || len(o.Status) <= len(lean) {
		return o
	}
	c := *o
	c.Status = lean
	return &c
}

// IsPhaseOnly reports whether o is a copy PhaseOnly made, not a stored
// pod (one stored with its phase alone is not).
func IsPhaseOnly(o *object.Object) bool {
	if o == nil || len(o.Status) == 0 {
		return false
	}
	for _, lean := range phaseStatuses {
		if unsafe.SliceData(o.Status) == unsafe.SliceData(lean) {
			return true
		}
	}
	return false
}

// KeepPods is what a cache of pods keeps (an informer's Keep) when it
// keeps lean(o, p) of each, p being o's decoded form when that is a *Pod
// made from o whole (nil otherwise): the copy, which p is made to refer
// to instead of o. PhaseOnlyOf takes p's phase for o's, so a decoder
// whose pods it keeps decodes the phase (PodAfter and PodPhaseAfter do).
func KeepPods(lean func(o *object.Object, p *Pod) *object.Object) func(o *object.Object, value any) *object.Object {
	return func(o *object.Object, value any) *object.Object {
		p, ok := value.(*Pod)
		if !ok || p == nil || p.Object != o {
			p = nil
		}
		c := lean(o, p)
		if p != nil && c != o {
			p.Object = c
		}
		return c
	}
}
