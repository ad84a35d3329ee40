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

// TestCheckedCustomKindsWhole: a custom kind's schema may tie its
// metadata to the rest of the object, so its objects are always checked
// whole: a rule that applies only where managed fields are present still
// refuses the second object with the same managed fields.
func TestCheckedCustomKindsWhole(t *testing.T) {
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	def, err := object.Decode([]byte(`{"apiVersion":"homeostat.io/v1","kind":"ResourceDefinition","metadata":{"name":"gauges.example.com"},
"spec":{"group":"example.com","version":"v1","kind":"Gauge","plural":"gauges","schema":{"type":"object",
"if":{"properties":{"metadata":{"required":["managedFields"]}}},
"then":{"properties":{"spec":{"properties":{"size":{"maximum":10}}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.Register(def)
	if err != nil {
		t.Fatal(err)
	}
	ref := &resourceRef{res: res, group: "example.com", version: "v1", plural: "gauges", namespace: "default"}
	gauge := func(name string, size int) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"example.com/v1","kind":"Gauge","metadata":{"name":"` + name +
			`","namespace":"default","managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}},"manager":"m","operation":"Update"}]},"spec":{"size":` + strconv.Itoa(size) + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	s := &Service{}
	small := gauge("small", 5)
	checked, e := s.check(ref, small)
	if e != nil {
		t.Fatalf("a valid gauge refused: %s", e.message)
	}
	// Written back as they came, so that a check which remembered fields
	// would remember these.
	if !bytes.Equal(checked.Metadata.ManagedFields, small.Metadata.ManagedFields) {
		t.Fatalf("the check wrote the managed fields\n%s\nthat came as\n%s", checked.Metadata.ManagedFields, small.Metadata.ManagedFields)
	}
	if _, e := s.check(ref, gauge("large", 100)); e == nil || e.code != http.StatusUnprocessableEntity {
		t.Fatalf("a gauge over its schema's maximum, with managed fields that passed before: answered %v, want 422", e)
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
	large := bytes.Repeat([]byte("x"), checkedMaxBytes+1)
	c.add(res, large)
	if c.known(res, large) {
		t.Fatal("managed fields over the size bound are remembered")
	}
	custom := &schemas.Resource{Custom: true}
	c.add(custom, key(1))
	if c.known(custom, key(1)) {
		t.Fatal("a custom kind's managed fields are remembered")
	}
}
