package schemas_test

import (
	"strings"
	"testing"
)

// Each case breaks one rule of ConfigMaps, Secrets or a pod's use of them,
// and must be refused naming that field and rule; the valid ones pass.
func TestConfigAndVolumeRules(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n" + spec
	}
	const container = "  containers:\n  - name: c\n    command: [\"true\"]\n"
	cases := []struct {
		name, plural, y string
		field, rule     string // empty: valid
	}{
		{"configmap", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {a.txt: x}\nbinaryData: {b: eA==}", "", ""},
		{"bad key", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {'a b': x}", "data[a b]", "pattern"},
		{"dot key", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {'..': x}", "data[..]", "pattern"},
		{"key twice", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {a: x}\nbinaryData: {a: eA==}", "binaryData[a]", "unique"},
		{"not base64", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\nbinaryData: {a: '%%%'}", "binaryData[a]", "format"},
		{"too big", "configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {a: " + big + "x}", "data", "maxSize"},
		{"secret", "secrets", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\ndata: {password: aHVudGVyMg==}", "", ""},
		{"secret not base64", "secrets", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\ndata: {password: hunter2!}", "data[password]", "format"},
		{"pod with both", "pods", pod(container + "    env:\n    - {name: A, value: x, valueFrom: {configMapKeyRef: {name: c, key: a}}}\n"),
			"spec.containers[0].env[0].valueFrom", "exclusive"},
		{"two sources", "pods", pod(container + "    env:\n    - name: A\n      valueFrom: {configMapKeyRef: {name: c, key: a}, secretKeyRef: {name: s, key: a}}\n"),
			"spec.containers[0].env[0].valueFrom", "oneOf"},
		{"envFrom empty", "pods", pod(container + "    envFrom: [{prefix: X_}]\n"), "spec.containers[0].envFrom[0]", "oneOf"},
		{"mount of nothing", "pods", pod(container + "    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]\n"),
			"spec.containers[0].volumeMounts[0].name", "exists"},
		{"mount escapes", "pods", pod(container + "    volumeMounts: [{name: v, mountPath: /etc/../../x}]\n  volumes: [{name: v, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].mountPath", "path"},
		{"mount at root", "pods", pod(container + "    volumeMounts: [{name: v, mountPath: /}]\n  volumes: [{name: v, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].mountPath", "path"},
		{"subPath escapes", "pods", pod(container + "    volumeMounts: [{name: v, mountPath: /x, subPath: ../y}]\n  volumes: [{name: v, emptyDir: {}}]\n"),
			"spec.containers[0].volumeMounts[0].subPath", "path"},
		{"volume twice", "pods", pod(container + "  volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}]\n"), "spec.volumes[1].name", "unique"},
		{"volume of two sources", "pods", pod(container + "  volumes: [{name: v, emptyDir: {}, configMap: {name: c}}]\n"), "spec.volumes[0]", "oneOf"},
		{"item outside", "pods", pod(container + "  volumes: [{name: v, secret: {secretName: s, items: [{key: a, path: /etc/a}]}}]\n"),
			"spec.volumes[0].secret.items[0].path", "path"},
		{"pod using config", "pods", pod(container + `    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: c, key: a}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    envFrom: [{secretRef: {name: s}, prefix: S_}]
    volumeMounts: [{name: cfg, mountPath: /etc/cfg}, {name: key, mountPath: /etc/key, subPath: tls.key}]
  volumes: [{name: cfg, configMap: {name: c}}, {name: key, secret: {secretName: s, defaultMode: 256}}]
`), "", ""},
	}
	r := registry(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.MustLookup("", c.plural)
			d := doc(t, c.y)
			res.Default(d)
			err := res.Validate(d)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused a valid object: %v", err)
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

// A Secret's stringData is folded into data, base64, over data's value.
func TestSecretStringDataFolds(t *testing.T) {
	res := registry(t).MustLookup("", "secrets")
	d := doc(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\ndata: {a: b2xk, keep: eA==}\nstringData: {a: new}")
	res.Default(d)
	m := d.(map[string]any)
	if _, ok := m["stringData"]; ok {
		t.Fatal("stringData is still there")
	}
	data := m["data"].(map[string]any)
	if data["a"] != "bmV3" || data["keep"] != "eA==" || m["type"] != "Opaque" {
		t.Fatalf("got %v, type %v", data, m["type"])
	}
	if err := res.Validate(d); err != nil {
		t.Fatal(err)
	}
}
