// Package table gives each kind the columns Kubernetes' server-side
// printing gives it, and renders objects as a meta.k8s.io/v1 Table: what
// kubectl get shows through the API and what the homeostat CLI prints
// come from here alone. A column of priority 0 is always shown; 1 only
// with -o wide.
package table

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/homeostat/homeostat/object"
)

// Column is one column of a kind's table.
type Column struct {
	Name        string
	Type        string // string, integer, date, as in a TableColumnDefinition
	Format      string // "name" for the name column
	Description string
	Priority    int32
	Cell        func(o *object.Object, doc map[string]any) any
}

// Field reads a nested field of a decoded object.
func Field(doc map[string]any, keys ...string) any {
	var cur any = doc
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// Num reads a nested number, 0 when absent.
func Num(doc map[string]any, keys ...string) int64 {
	if f, ok := Field(doc, keys...).(float64); ok {
		return int64(f)
	}
	return 0
}

// Str reads a nested field as text, "" when absent.
func Str(doc map[string]any, keys ...string) string {
	if v := Field(doc, keys...); v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// Age renders the time since t as kubectl does: 45s, 12m, 3h, 2d.
func Age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return ShortDuration(time.Since(t))
}

// ShortDuration renders a duration as kubectl does.
func ShortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func sinceRFC3339(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "<unknown>"
	}
	return Age(t)
}

var (
	nameCol = Column{Name: "Name", Type: "string", Format: "name", Description: "the object's name",
		Cell: func(o *object.Object, _ map[string]any) any { return o.Metadata.Name }}
	ageCol = Column{Name: "Age", Type: "string", Description: "time since the object was created",
		Cell: func(o *object.Object, _ map[string]any) any { return Age(o.Metadata.CreationTimestamp) }}
)

// text is a string column; count an integer one.
func text(name string, prio int32, f func(o *object.Object, d map[string]any) string) Column {
	return Column{Name: name, Type: "string", Priority: prio, Cell: func(o *object.Object, d map[string]any) any { return f(o, d) }}
}

func count(name string, keys ...string) Column {
	return Column{Name: name, Type: "integer", Cell: func(_ *object.Object, d map[string]any) any { return Num(d, keys...) }}
}

// Columns are a built-in kind's columns; a kind Kubernetes has no printer
// for, and a custom kind that declares none, gets Name and Age.
func Columns(kind string) []Column {
	if cols := workloadColumns(kind); cols != nil {
		return cols
	}
	if cols := clusterColumns(kind); cols != nil {
		return cols
	}
	return Default
}

// Default are the columns of a kind with no others: Name and Age.
var Default = []Column{nameCol, ageCol}

// templateColumns are the wide columns of every workload kind.
var templateColumns = []Column{
	text("Containers", 1, func(_ *object.Object, d map[string]any) string { return containerField(d, "name") }),
	text("Images", 1, func(_ *object.Object, d map[string]any) string { return containerField(d, "image") }),
	text("Selector", 1, selectorText),
}

func workloadColumns(kind string) []Column {
	switch kind {
	case "Pod":
		return []Column{nameCol, text("Ready", 0, podReady), text("Status", 0, podStatus),
			{Name: "Restarts", Type: "string", Cell: func(_ *object.Object, d map[string]any) any { return podRestarts(d) }}, ageCol,
			text("IP", 1, func(_ *object.Object, d map[string]any) string { return orNone(Str(d, "status", "podIP")) }),
			text("Node", 1, func(_ *object.Object, d map[string]any) string { return orNone(Str(d, "spec", "nodeName")) })}
	case "Deployment":
		return append([]Column{nameCol, text("Ready", 0, func(_ *object.Object, d map[string]any) string {
			return fmt.Sprintf("%d/%d", Num(d, "status", "readyReplicas"), Num(d, "spec", "replicas"))
		}), count("Up-to-date", "status", "updatedReplicas"), count("Available", "status", "availableReplicas"), ageCol}, templateColumns...)
	case "ReplicaSet":
		return append([]Column{nameCol, count("Desired", "spec", "replicas"), count("Current", "status", "replicas"),
			count("Ready", "status", "readyReplicas"), ageCol}, templateColumns...)
	case "DaemonSet":
		return append([]Column{nameCol, count("Desired", "status", "desiredNumberScheduled"),
			count("Current", "status", "currentNumberScheduled"), count("Ready", "status", "numberReady"),
			count("Up-to-date", "status", "updatedNumberScheduled"), count("Available", "status", "numberAvailable"),
			text("Node Selector", 0, func(_ *object.Object, d map[string]any) string {
				return orNone(mapText(Field(d, "spec", "template", "spec", "nodeSelector")))
			}), ageCol}, templateColumns...)
	case "Job":
		return append([]Column{nameCol, text("Status", 0, jobStatus), text("Completions", 0, func(_ *object.Object, d map[string]any) string {
			return fmt.Sprintf("%d/%d", Num(d, "status", "succeeded"), max(Num(d, "spec", "completions"), 1))
		}), text("Duration", 0, jobDuration), ageCol}, templateColumns...)
	}
	return nil
}

func clusterColumns(kind string) []Column {
	switch kind {
	case "Node":
		return []Column{nameCol, text("Status", 0, nodeStatus), text("Roles", 0, func(*object.Object, map[string]any) string { return "<none>" }),
			ageCol, text("Version", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "status", "nodeInfo", "kubeletVersion") }),
			text("Internal-IP", 1, nodeAddress),
			text("CPU", 1, func(_ *object.Object, d map[string]any) string { return Str(d, "status", "allocatable", "cpu") }),
			text("Memory", 1, func(_ *object.Object, d map[string]any) string { return Str(d, "status", "allocatable", "memory") }),
			text("Pods", 1, func(_ *object.Object, d map[string]any) string {
				return orNone(Str(d, "status", "allocatable", "pods"))
			})}
	case "Namespace":
		return []Column{nameCol, text("Status", 0, func(o *object.Object, d map[string]any) string {
			if o.Metadata.Deleting() {
				return "Terminating"
			}
			return orNone(Str(d, "status", "phase"))
		}), ageCol}
	case "Event":
		return eventColumns
	case "ConfigMap":
		return []Column{nameCol, dataCount, ageCol}
	case "Service":
		return []Column{nameCol, text("Type", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "spec", "type") }),
			text("Cluster-IP", 0, func(_ *object.Object, d map[string]any) string { return orNone(Str(d, "spec", "clusterIP")) }),
			text("External-IP", 0, serviceExternal), text("Port(s)", 0, servicePorts), ageCol,
			text("Selector", 1, func(_ *object.Object, d map[string]any) string { return orNone(mapText(Field(d, "spec", "selector"))) })}
	case "EndpointSlice":
		return []Column{nameCol, text("AddressType", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "addressType") }),
			text("Ports", 0, slicePorts), text("Endpoints", 0, sliceEndpoints), ageCol}
	case "Secret":
		return []Column{nameCol, text("Type", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "type") }), dataCount, ageCol}
	case "CustomResourceDefinition":
		return []Column{nameCol, {Name: "Created At", Type: "date", Description: "when the definition was made",
			Cell: func(o *object.Object, _ map[string]any) any {
				return o.Metadata.CreationTimestamp.UTC().Format(time.RFC3339)
			}}}
	case "ResourceDefinition":
		return []Column{nameCol, text("Kind", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "spec", "kind") }),
			text("Scope", 0, func(_ *object.Object, d map[string]any) string { return Str(d, "spec", "scope") }), ageCol}
	case "RoleBinding", "ClusterRoleBinding":
		return []Column{nameCol, text("Role", 0, func(_ *object.Object, d map[string]any) string {
			return Str(d, "roleRef", "kind") + "/" + Str(d, "roleRef", "name")
		}), ageCol,
			text("Users", 1, subjects("User")), text("Groups", 1, subjects("Group")), text("ServiceAccounts", 1, subjects("ServiceAccount"))}
	}
	return nil
}

// serviceExternal is a Service's external address as kubectl prints it:
// an ExternalName's host, a LoadBalancer's ingress or <pending>.
func serviceExternal(_ *object.Object, d map[string]any) string {
	switch Str(d, "spec", "type") {
	case "ExternalName":
		return Str(d, "spec", "externalName")
	case "LoadBalancer":
		ingress, _ := Field(d, "status", "loadBalancer", "ingress").([]any)
		var out []string
		for _, i := range ingress {
			m, _ := i.(map[string]any)
			if a := Str(m, "ip") + Str(m, "hostname"); a != "" {
				out = append(out, a)
			}
		}
		if len(out) == 0 {
			return "<pending>"
		}
		return strings.Join(out, ",")
	}
	return "<none>"
}

// servicePorts lists a Service's ports as port[:nodePort]/protocol.
func servicePorts(_ *object.Object, d map[string]any) string {
	ports, _ := Field(d, "spec", "ports").([]any)
	var out []string
	for _, p := range ports {
		m, _ := p.(map[string]any)
		s := fmt.Sprint(Num(m, "port"))
		if np := Num(m, "nodePort"); np != 0 {
			s += fmt.Sprintf(":%d", np)
		}
		out = append(out, s+"/"+Str(m, "protocol"))
	}
	return orNone(strings.Join(out, ","))
}

// slicePorts lists an EndpointSlice's port numbers as kubectl prints them.
func slicePorts(_ *object.Object, d map[string]any) string {
	ports, _ := Field(d, "ports").([]any)
	if len(ports) == 0 {
		return "<unset>"
	}
	var out []string
	for _, p := range ports {
		m, _ := p.(map[string]any)
		out = append(out, fmt.Sprint(Num(m, "port")))
	}
	return strings.Join(out, ",")
}

// sliceEndpoints lists an EndpointSlice's first three addresses and
// counts the others, as kubectl prints them.
func sliceEndpoints(_ *object.Object, d map[string]any) string {
	eps, _ := Field(d, "endpoints").([]any)
	var addrs []string
	for _, e := range eps {
		m, _ := e.(map[string]any)
		as, _ := m["addresses"].([]any)
		for _, a := range as {
			addrs = append(addrs, fmt.Sprint(a))
		}
	}
	switch {
	case len(addrs) == 0:
		return "<unset>"
	case len(addrs) > 3:
		return strings.Join(addrs[:3], ",") + fmt.Sprintf(" + %d more...", len(addrs)-3)
	}
	return strings.Join(addrs, ",")
}

// dataCount counts a ConfigMap's or Secret's keys.
var dataCount = Column{Name: "Data", Type: "integer", Cell: func(_ *object.Object, d map[string]any) any {
	data, _ := Field(d, "data").(map[string]any)
	bin, _ := Field(d, "binaryData").(map[string]any)
	return int64(len(data) + len(bin))
}}

func mapText(v any) string {
	m, _ := v.(map[string]any)
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func subjects(kind string) func(*object.Object, map[string]any) string {
	return func(_ *object.Object, d map[string]any) string {
		list, _ := Field(d, "subjects").([]any)
		var names []string
		for _, s := range list {
			m, _ := s.(map[string]any)
			if Str(m, "kind") != kind {
				continue
			}
			n := Str(m, "name")
			if kind == "ServiceAccount" {
				n = Str(m, "namespace") + "/" + n
			}
			names = append(names, n)
		}
		return strings.Join(names, ", ")
	}
}
