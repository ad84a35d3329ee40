package schemas_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

func doc(t *testing.T, y string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	v, err := schemas.DecodeJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func registry(t *testing.T) *schemas.Registry {
	t.Helper()
	r, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func causes(err error) []schemas.Cause {
	var inv *schemas.Invalid
	if !errors.As(err, &inv) {
		return nil
	}
	return inv.Causes
}

func TestValidPodAndDefaults(t *testing.T) {
	r := registry(t)
	pods := r.MustLookup("", "pods")
	d := doc(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  containers:
  - name: web
    image: demo:1
    command: [homeostat, demo]
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {port: 8080}}
`)
	if err := pods.Validate(d); err != nil {
		t.Fatalf("valid pod rejected: %v", err)
	}
	pods.Default(d)
	spec := d.(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	got := map[string]any{
		"restartPolicy": spec["restartPolicy"],
		"grace":         spec["terminationGracePeriodSeconds"],
		"protocol":      c["ports"].([]any)[0].(map[string]any)["protocol"],
		"probePath":     c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"],
		"period":        c["readinessProbe"].(map[string]any)["periodSeconds"],
		"hasLiveness":   c["livenessProbe"] != nil,
	}
	want := map[string]any{
		"restartPolicy": "Always", "grace": json.Number("30"), "protocol": "TCP",
		"probePath": "/", "period": json.Number("10"), "hasLiveness": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("defaults (-want +got):\n%s", diff)
	}
}

func TestInvalidPodListsEveryField(t *testing.T) {
	r := registry(t)
	err := r.MustLookup("", "pods").Validate(doc(t, `
apiVersion: v1
kind: Pod
metadata: {name: Bad_Name}
spec:
  restartPolicy: Sometimes
  containers:
  - name: a
    command: []
    ports: [{containerPort: 70000}]
    replicas: 3
  - image: x
    command: [x]
`))
	if !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	got := map[string]string{}
	for _, c := range causes(err) {
		got[c.Field] = c.Rule
	}
	want := map[string]string{
		"metadata.name":                             "pattern",
		"spec.restartPolicy":                        "enum",
		"spec.containers[0].command":                "minItems",
		"spec.containers[0].ports[0].containerPort": "maximum",
		"spec.containers[0].replicas":               "additionalProperties",
		"spec.containers[1].name":                   "required",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("causes (-want +got):\n%s", diff)
	}
}

func TestSelectorMustMatchTemplate(t *testing.T) {
	r := registry(t)
	err := r.MustLookup("apps", "deployments").Validate(doc(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, command: [x]}]}
`))
	want := []schemas.Cause{{Field: "spec.template.metadata.labels", Rule: "selectorMatch",
		Message: `the template's labels do not match the selector "app=web"`}}
	if diff := cmp.Diff(want, causes(err)); diff != "" {
		t.Fatalf("causes (-want +got):\n%s", diff)
	}
}

func TestCustomKindLifecycle(t *testing.T) {
	r := registry(t)
	defDoc := doc(t, `
apiVersion: homeostat.io/v1
kind: ResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  kind: Widget
  plural: widgets
  schema:
    type: object
    properties:
      spec:
        type: object
        required: [size]
        properties:
          size: {type: integer, minimum: 1, maximum: 10}
          color: {type: string, default: blue}
        additionalProperties: false
`)
	rds := r.MustLookup("homeostat.io", "resourcedefinitions")
	if err := rds.Validate(defDoc); err != nil {
		t.Fatalf("valid definition rejected: %v", err)
	}
	raw, _ := json.Marshal(defDoc)
	var def object.Object
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(&def); err != nil {
		t.Fatal(err)
	}
	res, ok := r.Lookup("example.com", "v1", "widgets")
	if !ok || !res.Namespaced || res.Kind != "Widget" {
		t.Fatalf("lookup after register: %+v %v", res, ok)
	}
	w := doc(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w1, namespace: default}, spec: {size: 3}}`)
	if err := res.Validate(w); err != nil {
		t.Fatalf("valid widget rejected: %v", err)
	}
	res.Default(w)
	if c := w.(map[string]any)["spec"].(map[string]any)["color"]; c != "blue" {
		t.Fatalf("default color: got %v", c)
	}
	bad := doc(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w2}, spec: {size: 11, shape: round}}`)
	got := map[string]string{}
	for _, c := range causes(res.Validate(bad)) {
		got[c.Field] = c.Rule
	}
	if diff := cmp.Diff(map[string]string{"spec.size": "maximum", "spec.shape": "additionalProperties"}, got); diff != "" {
		t.Fatalf("widget causes (-want +got):\n%s", diff)
	}
	r.Unregister("example.com", "widgets")
	if _, ok := r.Lookup("example.com", "v1", "widgets"); ok {
		t.Fatal("still served after unregister")
	}
}

func TestDefinitionChecks(t *testing.T) {
	r := registry(t)
	err := r.MustLookup("homeostat.io", "resourcedefinitions").Validate(doc(t, `
apiVersion: homeostat.io/v1
kind: ResourceDefinition
metadata: {name: wrong.example.com}
spec: {group: example.com, version: v1, kind: Gadget, plural: gadgets, schema: {type: 12}}
`))
	got := map[string]string{}
	for _, c := range causes(err) {
		got[c.Field] = c.Rule
	}
	if diff := cmp.Diff(map[string]string{"metadata.name": "name", "spec.schema": "schema"}, got); diff != "" {
		t.Fatalf("causes (-want +got):\n%s", diff)
	}
}
