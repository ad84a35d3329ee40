package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

const cronTabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule: {type: string}
              image: {type: string, nullable: true}
              replicas: {type: integer, minimum: 1, exclusiveMaximum: true, maximum: 10}
              port: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties: {type: {type: string}, status: {type: string}}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Schedule, type: string, jsonPath: .spec.schedule}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Port, type: string, priority: 1, jsonPath: .spec.port}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
`

// TestKubectlCustomResourceDefinitions: an operator's CRD applies as it
// is; its kind is served with the CRD's schema (OpenAPI's nullable,
// exclusive bounds and int-or-string included), columns and categories;
// what Homeostat cannot serve is refused naming the field; and deleting
// the CRD takes the kind and its objects with it.
func TestKubectlCustomResourceDefinitions(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created", cronTabCRD, "apply", "-f", "-")
	k.must("condition met", "", "wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")
	k.must("CREATED AT", "", "get", "crds")
	k.must("crontabs.stable.example.com   CronTab", "", "get", "resourcedefinitions")
	k.must("crontab.stable.example.com/nightly created",
		"apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: nightly}\nspec: {schedule: '0 3 * * *', image: null, replicas: 2, port: http}\n",
		"apply", "-f", "-")
	k.must("crontab.stable.example.com/nightly patched", "", "patch", "crontab", "nightly", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}`)
	out := k.must("", "", "get", "ct")
	if !strings.Contains(out, "NAME      SCHEDULE    REPLICAS   READY   AGE") || !strings.Contains(out, "nightly   0 3 * * *   2          True") {
		t.Fatalf("kubectl get ct:\n%s", out)
	}
	k.must("PORT", "", "get", "ct", "-o", "wide")
	k.must("crontab.stable.example.com/nightly", "", "get", "all")
	if out := s.must("", "get", "crontabs"); !strings.Contains(out, "SCHEDULE") || !strings.Contains(out, "True") {
		t.Fatalf("homeostat get crontabs:\n%s", out)
	}
	for _, bad := range []struct{ manifest, want string }{
		{"apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: bad}\nspec: {replicas: 10}\n", "spec.replicas"},
		{strings.Replace(cronTabCRD, "  - name: v1\n", "  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}\n  - name: v1\n", 1),
			"spec.versions[1].served: Homeostat serves one version"},
		{strings.Replace(cronTabCRD, "metadata:\n  name: crontabs.stable.example.com", "metadata:\n  name: crons.stable.example.com", 1),
			"must be spec.names.plural"},
	} {
		out, err := k.run(bad.manifest, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, bad.want) {
			t.Fatalf("applying an invalid manifest: %v\n%s\n(want %q)", err, out, bad.want)
		}
	}
	// A name a ResourceDefinition of its own holds is not taken over.
	k.must("resourcedefinition.homeostat.io/gizmos.example.com created",
		"apiVersion: homeostat.io/v1\nkind: ResourceDefinition\nmetadata: {name: gizmos.example.com}\nspec: {group: example.com, version: v1, kind: Gizmo, plural: gizmos, schema: {type: object}}\n",
		"apply", "-f", "-")
	clash := strings.NewReplacer("crontabs", "gizmos", "stable.example.com", "example.com", "CronTab", "Gizmo", "crontab", "gizmo", "[ct]", "[gz]").Replace(cronTabCRD)
	if out, err := k.run(clash, "apply", "-f", "-"); err == nil || !strings.Contains(out, "AlreadyExists") {
		t.Fatalf("a CRD over a ResourceDefinition's kind: %v\n%s", err, out)
	}

	k.must(`"crontabs.stable.example.com" deleted`, "", "delete", "crd", "crontabs.stable.example.com")
	poll.Until(t, "the kind gone with its CRD", 30*time.Second, func() bool {
		out, err := k.run("", "get", "resourcedefinitions", "-o", "name")
		return err == nil && !strings.Contains(out, "crontabs")
	})
	k.must("crontabs.stable.example.com created", cronTabCRD, "apply", "-f", "-")
	k.must("condition met", "", "wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")
	if out := k.must("", "", "get", "ct", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("objects outlived their kind's deletion: %q", out)
	}
}
