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

// An events.k8s.io/v1 Event is a core/v1 Event under other names, as in
// Kubernetes: one stored object, served in either shape.
var eventV1Names = map[string]string{
	"involvedObject": "regarding", "message": "note", "reportingComponent": "reportingController",
	"source": "deprecatedSource", "firstTimestamp": "deprecatedFirstTimestamp",
	"lastTimestamp": "deprecatedLastTimestamp", "count": "deprecatedCount",
}

// EventsAPIVersion is the group version of the second shape.
const EventsAPIVersion = "events.k8s.io/v1"

// EventToV1 is a stored (core/v1) Event in the events.k8s.io/v1 shape.
func EventToV1(o *object.Object) *object.Object {
	if o == nil {
		return nil
	}
	out := o.Clone()
	out.APIVersion = EventsAPIVersion
	if _, ok := out.Fields["involvedObject"]; !ok && len(out.Spec) > 0 {
		// Written by an earlier release, under spec.
		var fields map[string]json.RawMessage
		if json.Unmarshal(out.Spec, &fields) == nil {
			out.Fields, out.Spec = fields, nil
		}
	}
	out.Fields = renamed(out.Fields, eventV1Names)
	return out
}

// EventFromV1 is an events.k8s.io/v1 Event in the stored (core/v1) shape.
func EventFromV1(o *object.Object) *object.Object {
	if o == nil {
		return nil
	}
	back := make(map[string]string, len(eventV1Names))
	for core, v1 := range eventV1Names {
		back[v1] = core
	}
	out := o.Clone()
	out.APIVersion = "v1"
	out.Fields = renamed(out.Fields, back)
	return out
}

func renamed(fields map[string]json.RawMessage, names map[string]string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if n, ok := names[k]; ok {
			k = n
		}
		out[k] = v
	}
	return out
}
