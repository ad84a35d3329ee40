package schemas_test

import "testing"

// Each case breaks one rule of a Service and must be refused naming that
// field and rule; the valid ones pass, defaulted as Kubernetes defaults
// them.
func TestServiceRules(t *testing.T) {
	svc := func(spec string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec: " + spec
	}
	cases := []struct {
		name, y     string
		field, rule string // empty: valid
	}{
		{"one port", svc("{selector: {app: web}, ports: [{port: 80, targetPort: http}]}"), "", ""},
		{"two named ports", svc("{ports: [{name: http, port: 80}, {name: https, port: 443, targetPort: 8443}]}"), "", ""},
		{"same port, two protocols", svc("{ports: [{name: dns, port: 53}, {name: dns-udp, port: 53, protocol: UDP}]}"), "", ""},
		{"headless", svc("{clusterIP: None, selector: {app: web}}"), "", ""},
		{"external name", svc("{type: ExternalName, externalName: db.example.com}"), "", ""},
		{"node port", svc("{type: NodePort, ports: [{port: 80, nodePort: 30080}]}"), "", ""},
		{"no ports", svc("{selector: {app: web}}"), "spec.ports", "required"},
		{"external name without a name", svc("{type: ExternalName}"), "spec.externalName", "required"},
		{"unnamed of two", svc("{ports: [{name: http, port: 80}, {port: 443}]}"), "spec.ports[1].name", "required"},
		{"name twice", svc("{ports: [{name: http, port: 80}, {name: http, port: 81}]}"), "spec.ports[1].name", "unique"},
		{"port twice", svc("{ports: [{name: a, port: 80}, {name: b, port: 80}]}"), "spec.ports[1]", "unique"},
		{"node port of a ClusterIP", svc("{ports: [{port: 80, nodePort: 30080}]}"), "spec.ports[0].nodePort", "forbidden"},
		{"port out of range", svc("{ports: [{port: 70000}]}"), "spec.ports[0].port", "maximum"},
		{"bad target name", svc("{ports: [{port: 80, targetPort: Not_A_Name}]}"), "spec.ports[0].targetPort", "pattern"},
		{"unknown type", svc("{type: Magic, ports: [{port: 80}]}"), "spec.type", "enum"},
	}
	r := registry(t)
	res := r.MustLookup("", "services")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := doc(t, c.y)
			res.Default(d)
			err := res.Validate(d)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused a valid Service: %v", err)
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
	d := doc(t, svc("{ports: [{port: 80}]}"))
	res.Default(d)
	spec := d.(map[string]any)["spec"].(map[string]any)
	if spec["type"] != "ClusterIP" || spec["sessionAffinity"] != "None" || spec["ports"].([]any)[0].(map[string]any)["protocol"] != "TCP" {
		t.Fatalf("defaults: %v", spec)
	}
}
