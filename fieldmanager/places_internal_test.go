package fieldmanager

import (
	"slices"
	"testing"
)

// TestPlaces: the lists an update's shape takes by keys are those the
// field manager takes by keys, with its keys; every other list, and any
// place of no known type, is taken whole.
func TestPlaces(t *testing.T) {
	m := builtinManagers(t)
	at := func(apiVersion, kind, part string, names ...string) place {
		p := partPlace(m.root(apiVersion, kind), part)
		for _, n := range names {
			p = p.field(n)
		}
		return p
	}
	containers := func() place { return at("v1", "Pod", "spec", "containers") }
	_, container, _ := containers().keyed()
	for _, tc := range []struct {
		name string
		pl   place
		keys []string
	}{
		{"a Deployment's conditions", at("apps/v1", "Deployment", "status", "conditions"), []string{"type"}},
		{"a ReplicaSet's conditions", at("apps/v1", "ReplicaSet", "status", "conditions"), []string{"type"}},
		{"a Node's conditions", at("v1", "Node", "status", "conditions"), []string{"type"}},
		{"a pod's containers", containers(), []string{"name"}},
		{"a pod template's containers", at("apps/v1", "Deployment", "spec", "template", "spec", "containers"), []string{"name"}},
		{"an object's owners", at("v1", "Pod", "metadata.ownerReferences"), []string{"uid"}},
		{"an object's finalizers, a set", at("v1", "Pod", "metadata.finalizers"), nil},
		{"a container's command, atomic", container.field("command"), nil},
		{"a container's ports, atomic here", container.field("ports"), nil},
		{"a pod's tolerations, atomic", at("v1", "Pod", "spec", "tolerations"), nil},
		{"a ConfigMap's data, a map", at("v1", "ConfigMap", "fields.data"), nil},
		{"a member the type lacks", at("apps/v1", "Deployment", "status", "nonesuch"), nil},
		{"a kind the documents lack", at("example.com/v1", "Nonesuch", "spec", "items"), nil},
		{"a member no field is recorded for", at("v1", "Pod", "metadata.name"), nil},
	} {
		keys, _, ok := tc.pl.keyed()
		if ok != (tc.keys != nil) || !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: taken by keys %v (%q), want %q", tc.name, ok, keys, tc.keys)
		}
	}
	if _, ok := at("v1", "ConfigMap", "fields.data").field("k").atom(); !ok {
		t.Error("a ConfigMap's data has no type for its values")
	}
}
