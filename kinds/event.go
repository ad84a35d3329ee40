package kinds

import (
	"encoding/json"

	"github.com/homeostat/homeostat/object"
)

// Event records something a component did to an object, and why. Its
// fields sit at the top level of the object, beside metadata, as in a
// core/v1 Event; earlier releases kept them under spec, which EventOf
// still reads.
type Event struct {
	InvolvedObject     ObjectReference `json:"involvedObject"`
	Reason             string          `json:"reason"`
	Message            string          `json:"message,omitempty"`
	Type               string          `json:"type,omitempty"`
	Count              int32           `json:"count,omitempty"`
	FirstTimestamp     string          `json:"firstTimestamp,omitempty"`
	LastTimestamp      string          `json:"lastTimestamp,omitempty"`
	Source             EventSource     `json:"source,omitzero"`
	ReportingComponent string          `json:"reportingComponent,omitempty"`
	ReportingInstance  string          `json:"reportingInstance,omitempty"`
	// TraceID is the trace of the reconcile that recorded the event, kept
	// in the AnnotationTraceID annotation: core/v1 has no field for it.
	TraceID string `json:"traceID,omitempty"`
}

// AnnotationTraceID holds the trace of the write or reconcile behind an
// object (an Event, an audit record).
const AnnotationTraceID = "homeostat.io/trace-id"

// ObjectReference names an object.
type ObjectReference struct {
	APIVersion      string `json:"apiVersion,omitempty"`
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	Namespace       string `json:"namespace,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// EventSource names the component that recorded an event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// EventOf reads an Event object's fields.
func EventOf(o *object.Object) (Event, error) {
	var e Event
	if _, ok := o.Fields["involvedObject"]; !ok && len(o.Spec) > 0 {
		err := json.Unmarshal(o.Spec, &e)
		return e, err
	}
	b, err := json.Marshal(o.Fields)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, err
	}
	e.TraceID = o.Metadata.Annotations[AnnotationTraceID]
	return e, nil
}

// SetEvent writes e as o's top-level fields (and its trace as an
// annotation), replacing any earlier Event fields or spec.
func SetEvent(o *object.Object, e Event) error {
	trace := e.TraceID
	e.TraceID = ""
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	o.Spec = nil
	o.Fields = fields
	if trace != "" {
		if o.Metadata.Annotations == nil {
			o.Metadata.Annotations = map[string]string{}
		}
		o.Metadata.Annotations[AnnotationTraceID] = trace
	}
	return nil
}
