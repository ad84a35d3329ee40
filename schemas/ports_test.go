package schemas_test

import "testing"

// Each case breaks one rule of a pod's ports and must be refused naming
// that field and rule; the valid ones pass. The rules hold in a
// Deployment's template as in a pod.
func TestPortRules(t *testing.T) {
	pod := func(containers string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec: {containers: " + containers + "}"
	}
	deploy := func(containers string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n" +
			"spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: " + containers + "}}}"
	}
	cases := []struct {
		name, y     string
		field, rule string // empty: valid
	}{
		{"fixed", pod("[{name: c, command: [x], ports: [{containerPort: 8080}]}]"), "", ""},
		{"picked by number 0", pod("[{name: c, command: [x], ports: [{name: http, containerPort: 0}]}]"), "", ""},
		{"picked, no number", pod("[{name: c, command: [x], ports: [{name: http}, {name: metrics}]}]"), "", ""},
		{"host port equal", pod("[{name: c, command: [x], ports: [{containerPort: 80, hostPort: 80}]}]"), "", ""},
		{"same number, two protocols", pod("[{name: c, command: [x], ports: [{containerPort: 53}, {containerPort: 53, protocol: UDP}]}]"), "", ""},
		{"same name in two containers", pod("[{name: a, command: [x], ports: [{name: http}]}, {name: b, command: [x], ports: [{name: http}]}]"), "", ""},
		{"picked and unnamed", pod("[{name: c, command: [x], ports: [{containerPort: 0}]}]"), "spec.containers[0].ports[0].name", "required"},
		{"nothing at all", pod("[{name: c, command: [x], ports: [{}]}]"), "spec.containers[0].ports[0].name", "required"},
		{"name twice", pod("[{name: c, command: [x], ports: [{name: http}, {name: http, containerPort: 81}]}]"), "spec.containers[0].ports[1].name", "unique"},
		{"host port other", pod("[{name: c, command: [x], ports: [{containerPort: 80, hostPort: 8080}]}]"), "spec.containers[0].ports[0].hostPort", "equal"},
		{"host port of a picked one", pod("[{name: c, command: [x], ports: [{name: http, hostPort: 8080}]}]"), "spec.containers[0].ports[0].hostPort", "equal"},
		{"number twice in a pod", pod("[{name: a, command: [x], ports: [{containerPort: 80}]}, {name: b, command: [x], ports: [{containerPort: 80}]}]"),
			"spec.containers[1].ports[0].containerPort", "unique"},
		{"negative", pod("[{name: c, command: [x], ports: [{containerPort: -1}]}]"), "spec.containers[0].ports[0].containerPort", "minimum"},
		{"template, picked and unnamed", deploy("[{name: c, command: [x], ports: [{containerPort: 0}]}]"), "spec.template.spec.containers[0].ports[0].name", "required"},
		{"template, valid", deploy("[{name: c, command: [x], ports: [{name: http}]}]"), "", ""},
	}
	r := registry(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := doc(t, c.y)
			kind := d.(map[string]any)["kind"]
			res := r.MustLookup("", "pods")
			if kind == "Deployment" {
				res = r.MustLookup("apps", "deployments")
			}
			res.Default(d)
			err := res.Validate(d)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused valid ports: %v", err)
				}
				return
			}
			for _, cause := range causes(err) {
				if cause.Field == c.field && cause.Rule == c.rule {
					return
				}
			}
			t.Fatalf("got %v, want a cause at %s for rule %s", err, c.field, c.rule)
		})
	}
}
