package bench

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podProgress is what the bench's watch reads of a pod: its node once
// bound, and whether it runs ready. Which pod is its key: a run's store
// is new, and a name is made again only when a ReplicaSet replaces a pod
// in its slot (one that failed or was evicted), which a run's pods on
// simulated nodes do not; such a replacement would count from the first
// pod of its name. It is read from the
// stored JSON, every other member skipped undecoded: the bench's watch
// should cost the machine it measures as little as it can.
type podProgress struct {
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// readProgress reads a pod's progress from its stored JSON: its spec and
// status alone when its layout fits (the metadata, half of a pod, left
// unread), else the whole. With bound, the pod is known bound and its
// spec is not read where the layout allows (nor its node reported). Names are not checked for duplicates: the store
// holds what the API validated.
func readProgress(raw []byte, l object.Layout, bound bool) (podProgress, error) {
	var p podProgress
	spec, status, ok := l.Parts(raw)
	if !ok {
		err := json.Unmarshal(raw, &p, jsontext.AllowDuplicateNames(true))
		if bound {
			p.Spec.NodeName = ""
		}
		return p, err
	}
	if spec != nil && !bound {
		if err := json.Unmarshal(spec, &p.Spec, jsontext.AllowDuplicateNames(true)); err != nil {
			return p, err
		}
	}
	if status != nil {
		if err := json.Unmarshal(status, &p.Status, jsontext.AllowDuplicateNames(true)); err != nil {
			return p, err
		}
	}
	return p, nil
}

// runningReady says whether the pod runs and is ready.
func (p podProgress) runningReady() bool {
	if p.Status.Phase != kinds.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == kinds.PodReady {
			return c.Status == object.ConditionTrue
		}
	}
	return false
}
