package bench

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podProgress is what the bench's watch reads of a pod: which pod, its
// node once bound, and whether it runs ready. It is read from the stored
// JSON, every other member skipped undecoded: the bench's watch should
// cost the machine it measures as little as it can.
type podProgress struct {
	Metadata struct {
		UID string `json:"uid"`
	} `json:"metadata"`
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

// readProgress reads a pod's progress from its stored JSON. Names are
// not checked for duplicates: the store holds what the API validated.
func readProgress(raw []byte) (podProgress, error) {
	var p podProgress
	err := json.Unmarshal(raw, &p, jsontext.AllowDuplicateNames(true))
	return p, err
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
