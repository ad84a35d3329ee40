package api

import (
	"strings"

	"github.com/homeostat/homeostat/schemas"
)

// selectableFields are the fields a kind may be selected by, as Kubernetes
// defines them, each with where it is in the object: every kind has
// metadata.name and metadata.namespace, and each built-in kind a few more.
func selectableFields(res *schemas.Resource) map[string]string {
	fields := map[string]string{"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}
	if res.Custom {
		return fields
	}
	var more []string
	switch res.Kind {
	case "Pod":
		more = []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
			"spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}
	case "Event":
		if res.Group == "events.k8s.io" {
			more = []string{"regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid", "regarding.apiVersion",
				"regarding.resourceVersion", "regarding.fieldPath", "reason", "reportingController", "type"}
			break
		}
		more = []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "type"}
		fields["source"] = "source.component"
	case "Namespace":
		more = []string{"status.phase"}
	case "Node":
		more = []string{"spec.unschedulable"}
	case "ReplicaSet":
		more = []string{"status.replicas"}
	case "Job":
		fields["status.successful"] = "status.succeeded"
	case "Secret":
		more = []string{"type"}
	case "Service":
		more = []string{"spec.clusterIP", "spec.type"}
	}
	for _, f := range more {
		fields[f] = f
	}
	return fields
}

// fieldPath is where a field selector's label is in the object, or false
// when the kind cannot be selected by it.
func fieldPath(res *schemas.Resource, label string) ([]string, bool) {
	p, ok := selectableFields(res)[label]
	if !ok {
		return nil, false
	}
	return strings.Split(p, "."), true
}
