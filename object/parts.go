package object

import (
	"bytes"
	stdjson "encoding/json"
	"maps"
	"slices"
	"sort"
	"time"
)

// part is a member of an object that a write may change, other than what
// a store sets (resourceVersion, managed fields): same tells whether two
// objects hold the same value of it, value is the value, for its JSON.
type part struct {
	name  string
	same  func(a, b *Object) bool
	value func(o *Object) any
}

// metaParts are the members of metadata a write may change.
var metaParts = []part{
	{"name", func(a, b *Object) bool { return a.Metadata.Name == b.Metadata.Name }, func(o *Object) any { return o.Metadata.Name }},
	{"generateName", func(a, b *Object) bool { return a.Metadata.GenerateName == b.Metadata.GenerateName }, func(o *Object) any { return o.Metadata.GenerateName }},
	{"namespace", func(a, b *Object) bool { return a.Metadata.Namespace == b.Metadata.Namespace }, func(o *Object) any { return o.Metadata.Namespace }},
	{"uid", func(a, b *Object) bool { return a.Metadata.UID == b.Metadata.UID }, func(o *Object) any { return o.Metadata.UID }},
	{"generation", func(a, b *Object) bool { return a.Metadata.Generation == b.Metadata.Generation }, func(o *Object) any { return o.Metadata.Generation }},
	{"creationTimestamp", func(a, b *Object) bool { return sameTime(a.Metadata.CreationTimestamp, b.Metadata.CreationTimestamp) },
		func(o *Object) any { return o.Metadata.CreationTimestamp }},
	{"deletionTimestamp", func(a, b *Object) bool {
		return samePtr(a.Metadata.DeletionTimestamp, b.Metadata.DeletionTimestamp, sameTime)
	},
		func(o *Object) any { return o.Metadata.DeletionTimestamp }},
	{"deletionGracePeriodSeconds", func(a, b *Object) bool {
		return samePtr(a.Metadata.DeletionGracePeriodSeconds, b.Metadata.DeletionGracePeriodSeconds, func(x, y int64) bool { return x == y })
	}, func(o *Object) any { return o.Metadata.DeletionGracePeriodSeconds }},
	{"labels", func(a, b *Object) bool { return maps.Equal(a.Metadata.Labels, b.Metadata.Labels) }, func(o *Object) any { return o.Metadata.Labels }},
	{"annotations", func(a, b *Object) bool { return maps.Equal(a.Metadata.Annotations, b.Metadata.Annotations) },
		func(o *Object) any { return o.Metadata.Annotations }},
	{"ownerReferences", func(a, b *Object) bool {
		return slices.EqualFunc(a.Metadata.OwnerReferences, b.Metadata.OwnerReferences, sameOwnerReference)
	}, func(o *Object) any { return o.Metadata.OwnerReferences }},
	{"finalizers", func(a, b *Object) bool { return slices.Equal(a.Metadata.Finalizers, b.Metadata.Finalizers) },
		func(o *Object) any { return o.Metadata.Finalizers }},
}

var (
	specPart   = part{"spec", func(a, b *Object) bool { return sameMember(a.Spec, b.Spec) }, func(o *Object) any { return o.Spec }}
	statusPart = part{"status", func(a, b *Object) bool { return sameMember(a.Status, b.Status) }, func(o *Object) any { return o.Status }}
)

// sameMember reports whether two values of a member encode alike, but
// for form: unlike SameJSON, none, null and {} are told apart, as a
// field manager tells them (an empty object where there was none is a
// field added).
func sameMember(a, b stdjson.RawMessage) bool {
	if isNullish(a) || isNullish(b) {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return SameJSON(a, b)
}

// sameOutsideStatus reports whether a and b, whose specs are alike, hold
// the same values in every member a store does not set but the status.
// Where it says no, their encodings may still agree (an empty map for
// none, times apart by less than a second).
func sameOutsideStatus(a, b *Object) bool {
	if a.APIVersion != b.APIVersion || a.Kind != b.Kind || !sameMember(a.Spec, b.Spec) {
		return false
	}
	for _, p := range metaParts {
		if !p.same(a, b) {
			return false
		}
	}
	return maps.EqualFunc(a.Fields, b.Fields, sameMember)
}

// Part is a member of an object, named by its path, as two states of the
// object hold it.
type Part struct {
	Name       string
	Live, Next []byte
}

// Differing lists the members in which next differs from live, each with
// both values as JSON, apart from what a store sets (resourceVersion,
// managed fields) and from apiVersion and kind: what a write of next over
// live changes, which is all a field manager compares. Members are
// compared as in StatusOnly, so values that differ only in form are not
// listed.
func Differing(live, next *Object) []Part {
	var out []Part
	add := func(name string, l, n any) {
		lb, err1 := stdjson.Marshal(l)
		nb, err2 := stdjson.Marshal(n)
		if err1 != nil || err2 != nil {
			lb, nb = []byte("?"), []byte("!") // differs, and never alike
		}
		out = append(out, Part{Name: name, Live: lb, Next: nb})
	}
	for _, p := range metaParts {
		if !p.same(live, next) {
			add("metadata."+p.name, p.value(live), p.value(next))
		}
	}
	for _, p := range []part{specPart, statusPart} {
		if !p.same(live, next) {
			out = append(out, Part{Name: p.name, Live: p.value(live).(stdjson.RawMessage), Next: p.value(next).(stdjson.RawMessage)})
		}
	}
	names := slices.Collect(maps.Keys(live.Fields))
	for k := range next.Fields {
		if _, ok := live.Fields[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if !sameMember(live.Fields[k], next.Fields[k]) {
			out = append(out, Part{Name: "fields." + k, Live: live.Fields[k], Next: next.Fields[k]})
		}
	}
	return out
}

// sameTime reports times that encode alike: one instant, one offset.
func sameTime(a, b time.Time) bool {
	_, oa := a.Zone()
	_, ob := b.Zone()
	return a.Equal(b) && oa == ob
}

func samePtr[T any](a, b *T, same func(T, T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return same(*a, *b)
}

func sameOwnerReference(a, b OwnerReference) bool {
	eq := func(x, y bool) bool { return x == y }
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		samePtr(a.Controller, b.Controller, eq) && samePtr(a.BlockOwnerDeletion, b.BlockOwnerDeletion, eq)
}
