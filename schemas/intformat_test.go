package schemas_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// withNumber renders a YAML object to JSON and puts the number literal n,
// exactly as written, where the object says NUMBER. Going through YAML would
// turn 9223372036854775808 into a float before the validator saw it.
func withNumber(t *testing.T, y, n string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"NUMBER"`) {
		t.Fatalf("no NUMBER in %s", j)
	}
	v, err := schemas.DecodeJSON([]byte(strings.Replace(string(j), `"NUMBER"`, n, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const (
	podSpecYAML = `{containers: [{name: c, command: [x]}]}`
	templYAML   = `{metadata: {labels: {app: web}}, spec: ` + podSpecYAML + `}`

	deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: NUMBER
  selector: {matchLabels: {app: web}}
  template: ` + templYAML
	maxUnavailableYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template: ` + templYAML + `
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: NUMBER}}`
	deploymentStatusYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template: ` + templYAML + `
status: {readyReplicas: NUMBER}`
	observedGenerationYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template: ` + templYAML + `
status: {observedGeneration: NUMBER}`
	replicaSetYAML = `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: NUMBER
  selector: {matchLabels: {app: web}}
  template: ` + templYAML
	daemonSetYAML = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  minReadySeconds: NUMBER
  selector: {matchLabels: {app: web}}
  template: ` + templYAML
	daemonSetMaxUnavailableYAML = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template: ` + templYAML + `
  updateStrategy: {rollingUpdate: {maxUnavailable: NUMBER}}`
	jobYAML = `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  backoffLimit: NUMBER
  template: {spec: {restartPolicy: Never, containers: [{name: c, command: [x]}]}}`
	jobDeadlineYAML = `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  activeDeadlineSeconds: NUMBER
  template: {spec: {restartPolicy: Never, containers: [{name: c, command: [x]}]}}`
	eventYAML = `
apiVersion: v1
kind: Event
metadata: {name: ev, namespace: default}
involvedObject: {kind: Pod, name: p}
reason: Started
count: NUMBER`
	podPriorityYAML = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {priority: NUMBER, containers: [{name: c, command: [x]}]}`
	podProbeYAML = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, command: [x], readinessProbe: {exec: {command: [x]}, periodSeconds: NUMBER}}]}`
	podProbePortYAML = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, command: [x], livenessProbe: {tcpSocket: {port: NUMBER}}}]}`
	podGraceYAML = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {terminationGracePeriodSeconds: NUMBER, containers: [{name: c, command: [x]}]}`
	nodeYAML = `
apiVersion: v1
kind: Node
metadata: {name: n1, generation: NUMBER}`
)

func TestIntegerFormats(t *testing.T) {
	r := registry(t)
	above := func(field, bound, format string) []schemas.Cause {
		return []schemas.Cause{{Field: field, Rule: "format", Message: "must be at most " + bound + " (" + format + ")"}}
	}
	const max32, max64 = "2147483647", "9223372036854775807"
	tests := []struct {
		name          string
		group, plural string
		doc           string
		number        string
		want          []schemas.Cause
	}{
		{"Deployment replicas at int32 max", "apps", "deployments", deploymentYAML, "2147483647", nil},
		{"Deployment replicas above int32", "apps", "deployments", deploymentYAML, "2147483648", above("spec.replicas", max32, "int32")},
		{"Deployment replicas above int64", "apps", "deployments", deploymentYAML, "9223372036854775808", above("spec.replicas", max32, "int32")},
		{"Deployment replicas 1e30", "apps", "deployments", deploymentYAML, "1e30", above("spec.replicas", max32, "int32")},
		{"Deployment replicas 1.5 is not an integer", "apps", "deployments", deploymentYAML, "1.5",
			[]schemas.Cause{{Field: "spec.replicas", Rule: "type", Message: "got number, want integer"}}},
		{"Deployment replicas 1e3 is not written as an integer", "apps", "deployments", deploymentYAML, "1e3",
			[]schemas.Cause{{Field: "spec.replicas", Rule: "format", Message: "must be written without a decimal point or exponent, got 1e3 (int32)"}}},
		{"Deployment replicas 2.0 is not written as an integer", "apps", "deployments", deploymentYAML, "2.0",
			[]schemas.Cause{{Field: "spec.replicas", Rule: "format", Message: "must be written without a decimal point or exponent, got 2.0 (int32)"}}},
		{"Deployment replicas keeps its minimum", "apps", "deployments", deploymentYAML, "-1",
			[]schemas.Cause{{Field: "spec.replicas", Rule: "minimum", Message: "minimum: got -1, want 0"}}},
		{"Deployment maxUnavailable at int32 max", "apps", "deployments", maxUnavailableYAML, "2147483647", nil},
		{"Deployment maxUnavailable above int32", "apps", "deployments", maxUnavailableYAML, "2147483648",
			above("spec.strategy.rollingUpdate.maxUnavailable", max32, "int32")},
		{"Deployment maxUnavailable 1e30", "apps", "deployments", maxUnavailableYAML, "1e30",
			above("spec.strategy.rollingUpdate.maxUnavailable", max32, "int32")},
		{"Deployment maxUnavailable percentage", "apps", "deployments", maxUnavailableYAML, `"25%"`, nil},
		{"Deployment maxUnavailable 1.5", "apps", "deployments", maxUnavailableYAML, "1.5",
			[]schemas.Cause{{Field: "spec.strategy.rollingUpdate.maxUnavailable", Rule: "type", Message: "got number, want integer or string"}}},
		{"Deployment status counter at int32 max", "apps", "deployments", deploymentStatusYAML, "2147483647", nil},
		{"Deployment status counter above int32", "apps", "deployments", deploymentStatusYAML, "2147483648",
			above("status.readyReplicas", max32, "int32")},
		{"Deployment observedGeneration is int64", "apps", "deployments", observedGenerationYAML, "2147483648", nil},
		{"Deployment observedGeneration above int64", "apps", "deployments", observedGenerationYAML, "9223372036854775808",
			above("status.observedGeneration", max64, "int64")},
		{"ReplicaSet replicas at int32 max", "apps", "replicasets", replicaSetYAML, "2147483647", nil},
		{"ReplicaSet replicas above int32", "apps", "replicasets", replicaSetYAML, "2147483648", above("spec.replicas", max32, "int32")},
		{"DaemonSet minReadySeconds at int32 max", "apps", "daemonsets", daemonSetYAML, "2147483647", nil},
		{"DaemonSet minReadySeconds above int32", "apps", "daemonsets", daemonSetYAML, "2147483648", above("spec.minReadySeconds", max32, "int32")},
		{"DaemonSet maxUnavailable above int32", "apps", "daemonsets", daemonSetMaxUnavailableYAML, "2147483648",
			above("spec.updateStrategy.rollingUpdate.maxUnavailable", max32, "int32")},
		{"DaemonSet maxUnavailable percentage", "apps", "daemonsets", daemonSetMaxUnavailableYAML, `"25%"`, nil},
		{"Job backoffLimit at int32 max", "batch", "jobs", jobYAML, "2147483647", nil},
		{"Job backoffLimit above int32", "batch", "jobs", jobYAML, "2147483648", above("spec.backoffLimit", max32, "int32")},
		{"Job activeDeadlineSeconds at int64 max", "batch", "jobs", jobDeadlineYAML, "9223372036854775807", nil},
		{"Job activeDeadlineSeconds above int64", "batch", "jobs", jobDeadlineYAML, "9223372036854775808",
			above("spec.activeDeadlineSeconds", max64, "int64")},
		{"Job activeDeadlineSeconds 1e30", "batch", "jobs", jobDeadlineYAML, "1e30", above("spec.activeDeadlineSeconds", max64, "int64")},
		{"Event count at int32 max", "", "events", eventYAML, "2147483647", nil},
		{"Event count above int32", "", "events", eventYAML, "2147483648", above("count", max32, "int32")},
		{"Pod priority at int32 min", "", "pods", podPriorityYAML, "-2147483648", nil},
		{"Pod priority below int32", "", "pods", podPriorityYAML, "-2147483649",
			[]schemas.Cause{{Field: "spec.priority", Rule: "format", Message: "must be at least -2147483648 (int32)"}}},
		{"Pod priority -1e30", "", "pods", podPriorityYAML, "-1e30",
			[]schemas.Cause{{Field: "spec.priority", Rule: "format", Message: "must be at least -2147483648 (int32)"}}},
		{"Pod probe periodSeconds at int32 max", "", "pods", podProbeYAML, "2147483647", nil},
		{"Pod probe periodSeconds above int32", "", "pods", podProbeYAML, "2147483648",
			above("spec.containers[0].readinessProbe.periodSeconds", max32, "int32")},
		{"Pod probe port above int32", "", "pods", podProbePortYAML, "2147483648", []schemas.Cause{
			{Field: "spec.containers[0].livenessProbe.tcpSocket.port", Rule: "maximum"}, // the library's message
			{Field: "spec.containers[0].livenessProbe.tcpSocket.port", Rule: "format", Message: "must be at most 2147483647 (int32)"},
		}},
		{"Pod probe port by name", "", "pods", podProbePortYAML, `"http"`, nil},
		{"Pod terminationGracePeriodSeconds at int64 max", "", "pods", podGraceYAML, "9223372036854775807", nil},
		{"Pod terminationGracePeriodSeconds above int64", "", "pods", podGraceYAML, "9223372036854775808",
			above("spec.terminationGracePeriodSeconds", max64, "int64")},
		{"Node metadata.generation at int64 max", "", "nodes", nodeYAML, "9223372036854775807", nil},
		{"Node metadata.generation above int64", "", "nodes", nodeYAML, "9223372036854775808",
			above("metadata.generation", max64, "int64")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.MustLookup(tt.group, tt.plural)
			err := res.Validate(withNumber(t, tt.doc, tt.number))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, schemas.ErrInvalid) {
				t.Fatalf("Validate: %v, want ErrInvalid", err)
			}
			got := causes(err)
			for i := range got {
				if i < len(tt.want) && tt.want[i].Message == "" {
					got[i].Message = ""
				}
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("causes (-got +want):\n%s", diff)
			}
		})
	}
}

func TestIntegerFormatErrorMessage(t *testing.T) {
	r := registry(t)
	err := r.MustLookup("apps", "deployments").Validate(withNumber(t, deploymentYAML, "2147483648"))
	got := err.Error()
	want := `Deployment "web" is invalid: spec.replicas: must be at most 2147483647 (int32) (format)`
	if got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestCustomKindIntegerFormats: a ResourceDefinition's int32 and int64
// formats bound its integers; integers without a format and the other
// formats keep their meaning.
func TestCustomKindIntegerFormats(t *testing.T) {
	r := registry(t)
	defDoc := doc(t, `
apiVersion: homeostat.io/v1
kind: ResourceDefinition
metadata: {name: gauges.example.com}
spec:
  group: example.com
  version: v1
  kind: Gauge
  plural: gauges
  schema:
    type: object
    properties:
      spec:
        type: object
        properties:
          small: {type: integer, format: int32, minimum: 0}
          large: {type: integer, format: int64}
          level: {type: [integer, string], format: int32}
          free: {type: integer}
          since: {type: string, format: date-time}
`)
	if err := r.MustLookup("homeostat.io", "resourcedefinitions").Validate(defDoc); err != nil {
		t.Fatalf("valid definition rejected: %v", err)
	}
	raw, err := json.Marshal(defDoc)
	if err != nil {
		t.Fatal(err)
	}
	var def object.Object
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	res, err := r.Register(&def)
	if err != nil {
		t.Fatal(err)
	}
	const gauge = `{apiVersion: example.com/v1, kind: Gauge, metadata: {name: g, namespace: default}, spec: {%s: NUMBER}}`
	tests := []struct {
		field, number string
		want          []schemas.Cause
	}{
		{"small", "2147483647", nil},
		{"small", "2147483648", []schemas.Cause{{Field: "spec.small", Rule: "format", Message: "must be at most 2147483647 (int32)"}}},
		{"small", "1e30", []schemas.Cause{{Field: "spec.small", Rule: "format", Message: "must be at most 2147483647 (int32)"}}},
		{"large", "9223372036854775807", nil},
		{"large", "9223372036854775808", []schemas.Cause{{Field: "spec.large", Rule: "format", Message: "must be at most 9223372036854775807 (int64)"}}},
		{"level", `"high"`, nil},
		{"level", "2147483648", []schemas.Cause{{Field: "spec.level", Rule: "format", Message: "must be at most 2147483647 (int32)"}}},
		{"free", "9223372036854775808", nil},
		{"free", "1e30", nil},
		{"since", `"not a date"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.number, func(t *testing.T) {
			err := res.Validate(withNumber(t, strings.Replace(gauge, "%s", tt.field, 1), tt.number))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want no error", err)
				}
				return
			}
			if diff := cmp.Diff(causes(err), tt.want); diff != "" {
				t.Errorf("causes (-got +want):\n%s", diff)
			}
		})
	}
}

// schemaDocs reads the built-in schema documents from disk, by file name.
func schemaDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob("builtin/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	docs := map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		docs[filepath.Base(f)] = d
	}
	return docs
}

// TestEveryIntegerHasAFormat: each integer in the built-in schemas says
// which Go integer holds it, so that it gets that type's bounds.
func TestEveryIntegerHasAFormat(t *testing.T) {
	var walk func(file, at string, v any)
	walk = func(file, at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if isInteger(v["type"]) {
				if f := v["format"]; f != "int32" && f != "int64" {
					t.Errorf("%s#%s: an integer without format int32 or int64 (format %v)", file, at, f)
				}
			}
			for k, c := range v {
				switch k {
				case "default", "const", "enum", "examples":
					continue // values, not schemas
				}
				walk(file, at+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(file, at+"/"+strconv.Itoa(i), c)
			}
		}
	}
	for file, d := range schemaDocs(t) {
		walk(file, "", d)
	}
}

func isInteger(typ any) bool {
	switch typ := typ.(type) {
	case string:
		return typ == "integer"
	case []any:
		for _, x := range typ {
			if x == "integer" {
				return true
			}
		}
	}
	return false
}

// TestIntegerFormatsMatchGoTypes walks each built-in schema along the Go
// types that decode the kind, and checks that every int32 or int64 field
// (IntOrString holds an int32) has the matching format.
func TestIntegerFormatsMatchGoTypes(t *testing.T) {
	docs := schemaDocs(t)
	type parts struct{ spec, status any }
	kindTypes := map[string]parts{
		"pod.yaml":                {kinds.PodSpec{}, kinds.PodStatus{}},
		"replicaset.yaml":         {kinds.ReplicaSetSpec{}, kinds.ReplicaSetStatus{}},
		"deployment.yaml":         {kinds.DeploymentSpec{}, kinds.DeploymentStatus{}},
		"daemonset.yaml":          {kinds.DaemonSetSpec{}, kinds.DaemonSetStatus{}},
		"job.yaml":                {kinds.JobSpec{}, kinds.JobStatus{}},
		"node.yaml":               {kinds.NodeSpec{}, kinds.NodeStatus{}},
		"namespace.yaml":          {nil, nil},
		"resourcedefinition.yaml": {schemas.DefinitionSpec{}, nil},
	}
	w := &goWalker{t: t, docs: docs}
	for file, p := range kindTypes {
		root := docs[file]
		if root == nil {
			t.Fatalf("no %s", file)
		}
		w.field(file, root, "metadata", reflect.TypeOf(object.Meta{}))
		if p.spec != nil {
			w.field(file, root, "spec", reflect.TypeOf(p.spec))
		}
		if p.status != nil {
			w.field(file, root, "status", reflect.TypeOf(p.status))
		}
	}
	// An Event's fields sit at the top level; its trace is an annotation.
	et := reflect.TypeOf(kinds.Event{})
	for i := range et.NumField() {
		if name, _, _ := strings.Cut(et.Field(i).Tag.Get("json"), ","); name != "traceID" {
			w.field("event.yaml", docs["event.yaml"], name, et.Field(i).Type)
		}
	}
	// The built-in kinds hold 40 or so integers; finding far fewer means
	// the walk lost its way.
	if w.checked < 40 {
		t.Errorf("checked only %d integer fields", w.checked)
	}
}

type goWalker struct {
	t       *testing.T
	docs    map[string]map[string]any
	checked int
}

// node is a schema with the file its relative $refs resolve against.
type node struct {
	file string
	sch  map[string]any
}

// expand follows $ref and allOf, returning every schema that applies.
func (w *goWalker) expand(n node, depth int) []node {
	if n.sch == nil || depth > 32 {
		return nil
	}
	out := []node{n}
	if ref, ok := n.sch["$ref"].(string); ok {
		file, ptr, _ := strings.Cut(ref, "#")
		if file == "" {
			file = n.file
		}
		var cur any = w.docs[file]
		for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if p != "" {
				m, _ := cur.(map[string]any)
				cur = m[p]
			}
		}
		target, _ := cur.(map[string]any)
		if target == nil {
			w.t.Errorf("%s: unresolved $ref %s", n.file, ref)
		}
		out = append(out, w.expand(node{file, target}, depth+1)...)
	}
	all, _ := n.sch["allOf"].([]any)
	for _, s := range all {
		sub, _ := s.(map[string]any)
		out = append(out, w.expand(node{n.file, sub}, depth+1)...)
	}
	return out
}

// child finds the subschemas under a keyword (and a name, for properties).
func (w *goWalker) child(n node, keyword, name string) []node {
	var out []node
	for _, e := range w.expand(n, 0) {
		v := e.sch[keyword]
		if name != "" {
			m, _ := v.(map[string]any)
			v = m[name]
		}
		if sub, ok := v.(map[string]any); ok {
			out = append(out, node{e.file, sub})
		}
	}
	return out
}

func (w *goWalker) field(file string, sch map[string]any, name string, typ reflect.Type) {
	for _, c := range w.child(node{file, sch}, "properties", name) {
		w.walk(c, name, typ)
	}
}

var intOrString = reflect.TypeOf(kinds.IntOrString{})

func (w *goWalker) walk(n node, at string, typ reflect.Type) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := ""
	switch {
	case typ == intOrString, typ.Kind() == reflect.Int32:
		want = "int32"
	case typ.Kind() == reflect.Int64:
		want = "int64"
	}
	if want != "" {
		w.checked++
		var formats []any
		for _, e := range w.expand(n, 0) {
			if f, ok := e.sch["format"]; ok {
				formats = append(formats, f)
			}
		}
		if len(formats) != 1 || formats[0] != want {
			w.t.Errorf("%s: %s is %s in Go; the schema's formats are %v, want [%s]", n.file, at, typ, formats, want)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || name == "" {
				continue
			}
			for _, c := range w.child(n, "properties", name) {
				w.walk(c, at+"."+name, f.Type)
			}
		}
	case reflect.Slice, reflect.Array:
		for _, c := range w.child(n, "items", "") {
			w.walk(c, at+"[]", typ.Elem())
		}
	case reflect.Map:
		for _, c := range w.child(n, "additionalProperties", "") {
			w.walk(c, at+"{}", typ.Elem())
		}
	}
}
