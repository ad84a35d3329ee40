package object

import "time"

// Condition is one observation of an object's state, as in Kubernetes.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
	LastUpdateTime     time.Time `json:"lastUpdateTime,omitzero"`
	// LastHeartbeatTime is when a Node's agent last reported the
	// condition, changed or not.
	LastHeartbeatTime time.Time `json:"lastHeartbeatTime,omitzero"`
	Reason            string    `json:"reason,omitempty"`
	Message           string    `json:"message,omitempty"`
}

// Condition statuses.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []Condition, t string) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// SetCondition sets c in conds, keeping LastTransitionTime when the status
// does not change, and reports whether anything changed.
func SetCondition(conds *[]Condition, c Condition, now time.Time) bool {
	if old := FindCondition(*conds, c.Type); old != nil {
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message &&
			old.ObservedGeneration == c.ObservedGeneration {
			return false
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		c.LastUpdateTime = now
		*old = c
		return true
	}
	c.LastTransitionTime = now
	c.LastUpdateTime = now
	*conds = append(*conds, c)
	return true
}
