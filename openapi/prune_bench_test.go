package openapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Prune runs on every create and update the API takes.
func BenchmarkPrune(b *testing.B) {
	reg, d := documents(b)
	cases := []struct {
		name, group, version, plural, doc string
		kube                              reflect.Type
	}{
		{"configmap", "", "v1", "configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default","labels":{"a":"b"}},"data":{"k":"v"}}`,
			reflect.TypeFor[corev1.ConfigMap]()},
		{"deployment", "apps", "v1", "deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},
"spec":{"replicas":10,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},
"spec":{"containers":[{"name":"c","command":["sleep","infinity"],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}`,
			reflect.TypeFor[appsv1.Deployment]()},
	}
	for _, tc := range cases {
		res, ok := reg.Lookup(tc.group, tc.version, tc.plural)
		if !ok {
			b.Fatalf("no %s", tc.plural)
		}
		b.Run(tc.name, func(b *testing.B) {
			// Nothing is pruned (checked), so the document stays as it is.
			var doc map[string]any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if p := d.Prune(res, doc, tc.kube); len(p.Unknown)+len(p.Ignored) > 0 {
					b.Fatalf("pruned %v", p)
				}
			}
		})
	}
}
