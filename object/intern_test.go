package object

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// sameBytes says a and b are one copy of their bytes.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && samePlace(a, b)
}

// samePlace says a and b start at the same byte.
func samePlace(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// Objects decoded from the same managed fields share one copy of them,
// which nothing written to one object's copy can change for another.
func TestDecodedObjectsShareTheirManagedFields(t *testing.T) {
	raw := readPod(t)
	a, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Metadata.ManagedFields) == 0 {
		t.Fatal("the test pod has no managed fields")
	}
	if !sameBytes(a.Metadata.ManagedFields, b.Metadata.ManagedFields) {
		t.Fatal("two decodes of one pod hold two copies of its managed fields")
	}
	if c := a.Clone(); !sameBytes(c.Metadata.ManagedFields, a.Metadata.ManagedFields) {
		t.Fatal("a clone copied the managed fields")
	}
	roomy := &Object{Metadata: Meta{ManagedFields: append(make(stdjson.RawMessage, 0, 64), `[]`...)}}
	if grown := append(roomy.Clone().Metadata.ManagedFields, '!'); samePlace(grown, roomy.Metadata.ManagedFields) {
		t.Fatal("an append to a clone's managed fields wrote into the original's")
	}
	if (&Object{}).Clone().Metadata.ManagedFields != nil {
		t.Fatal("a clone of an object without managed fields has some")
	}
	want := string(a.Metadata.ManagedFields)
	grown := append(b.Metadata.ManagedFields, ' ')
	if string(a.Metadata.ManagedFields) != want || samePlace(grown, a.Metadata.ManagedFields) {
		t.Fatal("an append to one object's managed fields wrote into another's")
	}

	other := bytes.Replace(raw, []byte(`"manager":"`), []byte(`"manager":"x`), 1)
	o, err := Decode(other)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(o.Metadata.ManagedFields, a.Metadata.ManagedFields) {
		t.Fatal("the changed pod decoded with the first one's managed fields")
	}
}

// The table keeps at most maxBytes: when full it starts again, and what
// it gave out stays as it was. A value longer than maxValue is not kept.
func TestInternTableStartsAgainWhenFull(t *testing.T) {
	tab := &internTable[stdjson.RawMessage]{maxBytes: 9, maxValue: 5}
	var kept []stdjson.RawMessage
	for i := range 3 {
		kept = append(kept, internIn(tab, stdjson.RawMessage(fmt.Sprintf(`[%d]`, i))))
	}
	if again := internIn(tab, stdjson.RawMessage(`[1]`)); !sameBytes(again, kept[1]) {
		t.Fatal("a value kept was not given out again")
	}
	if len(tab.m) != 3 {
		t.Fatalf("the table holds %d values, want 3", len(tab.m))
	}
	internIn(tab, stdjson.RawMessage(`[3]`))
	if len(tab.m) != 1 || tab.size != 3 {
		t.Fatalf("after a fourth value the table holds %d values of %d bytes, want 1 of 3 (it starts again)", len(tab.m), tab.size)
	}
	if again := internIn(tab, stdjson.RawMessage(`[1]`)); sameBytes(again, kept[1]) || string(again) != `[1]` {
		t.Fatalf("after starting again, [1] came back as %s from the old table", again)
	}
	for i, v := range kept {
		if string(v) != fmt.Sprintf(`[%d]`, i) {
			t.Fatalf("value %d is now %s", i, v)
		}
	}
	long := internIn(tab, stdjson.RawMessage(`[1,2,3]`))
	if again := internIn(tab, stdjson.RawMessage(`[1,2,3]`)); sameBytes(again, long) || len(tab.m) != 2 {
		t.Fatalf("a value longer than maxValue was kept (the table holds %d)", len(tab.m))
	}
	// A value with room to grow is kept without it, so that an append
	// to what one caller was given copies rather than writes into what
	// the next is given.
	for _, roomy := range []stdjson.RawMessage{
		append(make(stdjson.RawMessage, 0, 64), `[9]`...),
		append(make(stdjson.RawMessage, 0, 64), `[1,2,3,4]`...), // not kept
	} {
		want := string(roomy)
		grown := append(internIn(tab, roomy), '!')
		if samePlace(grown, roomy) || string(roomy) != want {
			t.Fatalf("an append to %s wrote into it", want)
		}
	}
	if got := internIn(tab, nil); got != nil {
		t.Fatalf("nil came back as %q", got)
	}
}

// Objects decoded, whole or by their layout, from the same spec share one
// copy of it; an append to one object's copy leaves the other's be.
func TestDecodedObjectsShareTheirSpecs(t *testing.T) {
	var decoded []*Object
	for i, node := range []string{"n1", "n1", "n2"} {
		o := layoutCase(fmt.Sprint("p", i), "", `{"containers":[{"name":"c"}],"nodeName":"`+node+`"}`, `{"phase":"Running"}`)
		data, l, err := EncodeLayout(o)
		if err != nil || (l == Layout{}) {
			t.Fatalf("encoding with a layout: %+v, %v", l, err)
		}
		byLayout, err := DecodeLayout(data, l)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, byLayout, whole)
	}
	for i, o := range decoded[1:4] {
		if !sameBytes(o.Spec, decoded[0].Spec) {
			t.Fatalf("decode %d of an equal spec holds a copy of its own", i+1)
		}
	}
	if bytes.Equal(decoded[4].Spec, decoded[0].Spec) || samePlace(decoded[4].Spec, decoded[0].Spec) {
		t.Fatal("another node's spec was given the first's")
	}
	if !sameBytes(decoded[4].Spec, decoded[5].Spec) {
		t.Fatal("the other spec's two decodes hold a copy each")
	}
	want := string(decoded[0].Spec)
	if grown := append(decoded[1].Spec, ' '); samePlace(grown, decoded[0].Spec) || string(decoded[0].Spec) != want {
		t.Fatal("an append to one object's spec wrote into another's")
	}
}

// Equal values meet in one shard, whose bound is its share of the whole.
func TestInternShards(t *testing.T) {
	s := newInternShards[stdjson.RawMessage](16*9, 5)
	a := intern(s, stdjson.RawMessage(`[1]`))
	if b := intern(s, stdjson.RawMessage(`[1]`)); !sameBytes(a, b) {
		t.Fatal("an equal value was not given the kept copy")
	}
	for i := range s {
		if s[i].maxBytes != 9 || s[i].maxValue != 5 {
			t.Fatalf("shard %d is bounded at %d bytes and values of %d, want 9 and 5", i, s[i].maxBytes, s[i].maxValue)
		}
	}
	held := 0
	for i := range s {
		held += len(s[i].m)
	}
	if n := len(s.shard([]byte(`[1]`)).m); n != 1 || held != 1 {
		t.Fatalf("the value's shard holds %d and all shards %d, want 1 and 1", n, held)
	}
}

// Keys of one length, as the specs of pods on nodes named alike are, are
// spread over the shards, not kept in one.
func TestInternShardsSpreadKeysOfOneLength(t *testing.T) {
	s := newInternShards[stdjson.RawMessage](1<<20, 64)
	for i := range 1000 {
		intern(s, stdjson.RawMessage(fmt.Sprintf(`{"nodeName":"n-%04d"}`, i)))
	}
	for i := range s {
		if n := len(s[i].m); n < 20 || n > 120 {
			t.Fatalf("shard %d holds %d of 1,000 keys of one length, want about 62", i, n)
		}
	}
}

// A shared decoder gives the value it decoded from the same bytes again;
// what failed to decode, or is longer than its bound, it does not keep.
func TestSharedDecoderKeepsWhatItDecoded(t *testing.T) {
	type item struct{ N int }
	d := NewSharedDecoder[*item](16*64, 16)
	a, err := d.Decode([]byte(`{"N":1}`))
	if err != nil || a.N != 1 {
		t.Fatalf("decoded %+v, %v", a, err)
	}
	if b, _ := d.Decode([]byte(`{"N":1}`)); b != a {
		t.Fatal("the same bytes decoded again into a copy of their own")
	}
	if c, _ := d.Decode([]byte(`{"N":2}`)); c == a || c.N != 2 {
		t.Fatalf("other bytes gave %+v", c)
	}
	if _, err := d.Decode([]byte(`{"N":"x"}`)); err == nil {
		t.Fatal("a value of the wrong type decoded")
	}
	if _, err := d.Decode([]byte(`{"N":"x"}`)); err == nil {
		t.Fatal("a value that failed to decode was kept")
	}
	long := []byte(`{"N":3,"M":"0123456789"}`)
	if x, _ := d.Decode(long); x.N != 3 {
		t.Fatalf("decoded %+v", x)
	}
	if x, y := mustDecode(t, d, long), mustDecode(t, d, long); x == y {
		t.Fatal("a value longer than the bound was kept")
	}
}

func mustDecode[V any](t *testing.T, d *SharedDecoder[V], b []byte) V {
	t.Helper()
	v, err := d.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Objects whose labels or annotations are equal share one map after
// ShareParts; maps that differ in any way keep their own, and a Clone has
// maps of its own again.
func TestSharePartsSharesEqualMaps(t *testing.T) {
	many := map[string]string{}
	for i := range maxSharedMap + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	for _, tc := range []struct {
		name  string
		a, b  map[string]string
		share bool
	}{
		{"equal", map[string]string{"app": "web", "pod-template-hash": "abc"}, map[string]string{"pod-template-hash": "abc", "app": "web"}, true},
		{"another value", map[string]string{"app": "web"}, map[string]string{"app": "db"}, false},
		{"one more entry", map[string]string{"app": "web"}, map[string]string{"app": "web", "x": ""}, false},
		{"the same bytes split elsewhere", map[string]string{"ab": "c"}, map[string]string{"a": "bc"}, false},
		{"an empty value against none", map[string]string{"a": "", "b": ""}, map[string]string{"a": "b"}, false},
		{"too many entries", many, maps.Clone(many), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case's own prefix, so that no case finds another's.
			label := func(m map[string]string) map[string]string {
				out := map[string]string{"case": tc.name}
				maps.Copy(out, m)
				if len(m) > maxSharedMap {
					return maps.Clone(m)
				}
				return out
			}
			a := &Object{Metadata: Meta{Labels: label(tc.a), Annotations: label(tc.a)}}
			b := &Object{Metadata: Meta{Labels: label(tc.b), Annotations: label(tc.b)}}
			wantA, wantB := maps.Clone(a.Metadata.Labels), maps.Clone(b.Metadata.Labels)
			a.ShareParts()
			b.ShareParts()
			if !maps.Equal(a.Metadata.Labels, wantA) || !maps.Equal(b.Metadata.Labels, wantB) ||
				!maps.Equal(a.Metadata.Annotations, wantA) || !maps.Equal(b.Metadata.Annotations, wantB) {
				t.Fatalf("sharing changed the maps: %v %v, want %v %v", a.Metadata.Labels, b.Metadata.Labels, wantA, wantB)
			}
			if got := sameMap(a.Metadata.Labels, b.Metadata.Labels); got != tc.share {
				t.Errorf("labels shared: %v, want %v", got, tc.share)
			}
			if got := sameMap(a.Metadata.Annotations, b.Metadata.Annotations); got != tc.share {
				t.Errorf("annotations shared: %v, want %v", got, tc.share)
			}
			if c := b.Clone(); sameMap(c.Metadata.Labels, b.Metadata.Labels) || sameMap(c.Metadata.Annotations, b.Metadata.Annotations) {
				t.Error("a clone shares the maps of the object it copies")
			}
		})
	}
	var none Object
	none.ShareParts()
	if none.Metadata.Labels != nil || none.Metadata.Annotations != nil {
		t.Error("an object without maps got some")
	}
}

// Objects whose owner references are equal, flags included, share one
// list after ShareParts, which has no room to grow; lists that differ in
// any way keep their own, and a Clone has a list of its own again.
func TestSharePartsSharesEqualOwnerReferences(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		a, b  []OwnerReference
		share bool
	}{
		{"equal", []OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u1", Controller: &yes, BlockOwnerDeletion: &yes}},
			[]OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u1", Controller: &yes, BlockOwnerDeletion: &yes}}, true},
		{"another owner", []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1"}}, []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u2"}}, false},
		{"no flag against false", []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1"}}, []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1", Controller: &no}}, false},
		{"false against true", []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1", BlockOwnerDeletion: &no}},
			[]OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1", BlockOwnerDeletion: &yes}}, false},
		{"the same bytes split elsewhere", []OwnerReference{{Kind: "ab", Name: "c", UID: "u1"}}, []OwnerReference{{Kind: "a", Name: "bc", UID: "u1"}}, false},
		{"one more owner", []OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1"}},
			[]OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "u1"}, {Kind: "Job", Name: "j", UID: "u3"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case's own API version, so that no case finds another's.
			own := func(refs []OwnerReference) []OwnerReference {
				out := slices.Clone(refs)
				for i := range out {
					out[i].APIVersion += "/" + tc.name
				}
				return out
			}
			a := &Object{Metadata: Meta{OwnerReferences: append(make([]OwnerReference, 0, 4), own(tc.a)...)}}
			b := &Object{Metadata: Meta{OwnerReferences: own(tc.b)}}
			wantA, wantB := slices.Clone(a.Metadata.OwnerReferences), slices.Clone(b.Metadata.OwnerReferences)
			a.ShareParts()
			b.ShareParts()
			if !reflect.DeepEqual(a.Metadata.OwnerReferences, wantA) || !reflect.DeepEqual(b.Metadata.OwnerReferences, wantB) {
				t.Fatalf("sharing changed the references: %+v %+v", a.Metadata.OwnerReferences, b.Metadata.OwnerReferences)
			}
			if got := &a.Metadata.OwnerReferences[0] == &b.Metadata.OwnerReferences[0]; got != tc.share {
				t.Fatalf("references shared: %v, want %v", got, tc.share)
			}
			if cap(a.Metadata.OwnerReferences) != len(a.Metadata.OwnerReferences) {
				t.Fatal("a shared list has room to grow")
			}
			if c := b.Clone(); &c.Metadata.OwnerReferences[0] == &b.Metadata.OwnerReferences[0] {
				t.Fatal("a clone shares the references of the object it copies")
			}
		})
	}
	var none Object
	none.ShareParts()
	if none.Metadata.OwnerReferences != nil {
		t.Error("an object without owner references got some")
	}
}

// sameMap says a and b are one map.
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// A map kept counts its entries' bytes and the map's own against the
// table's bound, not its key's bytes alone.
func TestSharedMapsCountTheirMaps(t *testing.T) {
	first, _ := mapKey(nil, map[string]string{"counted": "0000"})
	shards := newInternShards[map[string]string](16*3*(len(first)+mapBytes), 1024)
	// Four maps whose keys meet in one shard, which holds three.
	var maps4 []map[string]string
	tab := shards.shard(first)
	for i := 0; len(maps4) < 4; i++ {
		m := map[string]string{"counted": fmt.Sprintf("%04d", i)}
		if key, _ := mapKey(nil, m); shards.shard(key) == tab {
			maps4 = append(maps4, m)
		}
	}
	var kept []map[string]string
	for i, m := range maps4 {
		key, _ := mapKey(nil, m)
		kept = append(kept, shareMapIn(shards, m))
		tab.mu.Lock()
		size, n := tab.size, len(tab.m)
		tab.mu.Unlock()
		if want := min(i, 2) + 1; i < 3 && (n != want || size != want*(len(key)+mapBytes)) || i == 3 && n != 1 {
			t.Fatalf("after %d maps the shard holds %d of %d bytes", i+1, n, size)
		}
	}
	if again := shareMapIn(shards, maps.Clone(maps4[0])); sameMap(again, kept[0]) {
		t.Fatal("a map from before the shard started again was given out")
	}
}
