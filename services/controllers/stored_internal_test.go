package controllers

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// stored gives a write the pod as stored when the cache holds it lean,
// at the revision the cache saw or not at all.
func TestStoredReadsLeanPodsWhole(t *testing.T) {
	ctx := t.Context()
	pods, err := bustest.Conn(t).Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	created, err := pods.Create(ctx, &object.Object{APIVersion: "v1", Kind: "Pod",
		Metadata: object.Meta{Name: "p", Namespace: "default"}, Spec: json.RawMessage(`{"nodeName":"n"}`)})
	if err != nil {
		t.Fatal(err)
	}
	running := func(cur *object.Object, ip string) *object.Object {
		t.Helper()
		n := cur.Clone()
		n.Status = json.RawMessage(`{"phase":"Running","podIP":"` + ip + `"}`)
		o, err := pods.Update(ctx, n, bus.UpdateOptions{Current: cur})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first := running(created, "10.0.0.1")
	latest := running(first, "10.0.0.2")

	if o, err := stored(ctx, pods, latest); err != nil || o != latest {
		t.Fatalf("a whole pod: got %v, %v; want the pod itself", o, err)
	}
	o, err := stored(ctx, pods, kinds.PhaseOnly(latest))
	if err != nil || !object.SameJSON(o.Status, latest.Status) || o.Metadata.ResourceVersion != latest.Metadata.ResourceVersion {
		t.Fatalf("a lean copy of the latest: got %v, %v; want the stored pod", o, err)
	}
	if _, err := stored(ctx, pods, kinds.PhaseOnly(first)); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a lean copy of an older revision: %v, want a conflict", err)
	}
	if _, _, err := pods.Delete(ctx, latest.Key(), bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := stored(ctx, pods, kinds.PhaseOnly(latest)); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("a lean copy of a pod gone: %v, want not found", err)
	}
}
