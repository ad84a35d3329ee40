package api

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// TestCheckedManagedFields: the schema check of an object whose managed
// fields passed it before stores what the whole check would have, and
// the fields it remembers never let through what the check refuses.
func TestCheckedManagedFields(t *testing.T) {
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	fields := fieldmanager.New(openapi.NewCache(reg))
	configMaps := &resourceRef{res: reg.MustLookup("", "configmaps"), version: "v1", plural: "configmaps", namespace: "default"}
	deployments := &resourceRef{res: reg.MustLookup("apps", "deployments"), group: "apps", version: "v1", plural: "deployments", namespace: "default"}
	decode := func(doc string) *object.Object {
		t.Helper()
		o, err := object.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	configMap := func(name, data string) *object.Object {
		return fields.Record("kubectl", "", nil, decode(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"default"},"data":`+data+`}`))
	}
	deployment := func(name string) *object.Object {
		return fields.Record("kubectl", "", nil, decode(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"`+name+`","namespace":"default"},
"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}}}`))
	}
	encoded := func(o *object.Object, e *apiError) []byte {
		t.Helper()
		if e != nil {
			t.Fatalf("refused: %d %s", e.code, e.message)
		}
		b, err := object.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	refused := func(what string, o *object.Object, e *apiError) {
		t.Helper()
		if e == nil || e.code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: answered %v, want 422", what, e)
		}
	}

	for _, tc := range []struct {
		ref        *resourceRef
		first, now func() *object.Object
	}{
		{configMaps, func() *object.Object { return configMap("a", `{"k":"v"}`) }, func() *object.Object { return configMap("b", `{"k":"w"}`) }},
		{deployments, func() *object.Object { return deployment("a") }, func() *object.Object { return deployment("b") }},
	} {
		s := &Service{}
		first, now := tc.first(), tc.now()
		if !bytes.Equal(first.Metadata.ManagedFields, now.Metadata.ManagedFields) {
			t.Fatalf("%s: the two objects' managed fields differ: the test needs them alike", tc.ref.plural)
		}
		encoded(s.check(tc.ref, first))
		if !s.checked.known(tc.ref.res, now.Metadata.ManagedFields) {
			t.Fatalf("%s: managed fields that passed are not remembered", tc.ref.plural)
		}
		warm := encoded(s.check(tc.ref, now))
		cold := encoded((&Service{}).check(tc.ref, tc.now()))
		if !bytes.Equal(warm, cold) {
			t.Fatalf("%s: checked with remembered managed fields:\n%s\nwith none remembered:\n%s", tc.ref.plural, warm, cold)
		}
	}

	s := &Service{}
	good := configMap("a", `{"k":"v"}`)
	encoded(s.check(configMaps, good))
	// The rest of an object is still checked when its managed fields are known.
	bad := configMap("Not_A_Name", `{"k":"v"}`)
	if !s.checked.known(configMaps.res, bad.Metadata.ManagedFields) {
		t.Fatal("the bad object's managed fields should be the ones remembered")
	}
	o, e := s.check(configMaps, bad)
	refused("a name that is not a DNS subdomain", o, e)
	// Remembered for their kind alone.
	if s.checked.known(deployments.res, good.Metadata.ManagedFields) {
		t.Fatal("managed fields that passed a ConfigMap's check are known for Deployments")
	}
	// Managed fields a client brings that the check refuses are refused
	// every time, and never remembered.
	forged := decode(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default","managedFields":[{"manager":5}]},"data":{"k":"v"}}`)
	for range 2 {
		o, e := s.check(configMaps, forged)
		refused("a managed fields entry whose manager is a number", o, e)
	}
	if s.checked.known(configMaps.res, forged.Metadata.ManagedFields) {
		t.Fatal("refused managed fields are remembered")
	}
}

// TestCheckedFieldsBounded: what is remembered stays within its bound.
func TestCheckedFieldsBounded(t *testing.T) {
	var c checkedFields
	res := &schemas.Resource{}
	key := func(i int) []byte { return []byte(strconv.Itoa(i)) }
	for i := range checkedSize + 10 {
		c.add(res, key(i))
		if len(c.m) > checkedSize {
			t.Fatalf("%d remembered, bound %d", len(c.m), checkedSize)
		}
	}
	if !c.known(res, key(checkedSize+9)) {
		t.Fatal("the last added is not known")
	}
	if c.known(res, nil) {
		t.Fatal("no managed fields are known")
	}
}
