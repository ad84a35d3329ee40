package audit

import (
	"testing"
	"time"
)

func TestLevelRecords(t *testing.T) {
	for _, c := range []struct {
		level Level
		verb  string
		code  int
		want  bool
	}{
		{LevelWrite, "create", 201, true},
		{LevelWrite, "delete", 404, true},
		{LevelWrite, "patch", 422, true},
		{LevelWrite, "get", 200, false},
		{LevelWrite, "watch", 200, false},
		{LevelWrite, "list", 403, true},
		{LevelWrite, "get", 401, true},
		{LevelAll, "get", 200, true},
		{LevelNone, "create", 201, false},
		{LevelNone, "get", 403, false},
	} {
		if got := c.level.Records(c.verb, c.code); got != c.want {
			t.Errorf("%s.Records(%s, %d) = %v, want %v", c.level, c.verb, c.code, got, c.want)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{"none": LevelNone, "Write": LevelWrite, "ALL": LevelAll} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseLevel("metadata"); err == nil {
		t.Error("ParseLevel(metadata) took it")
	}
}

func TestQueryMatches(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &Event{Verb: "create", User: UserInfo{Username: "admin"}, ImpersonatedUser: &UserInfo{Username: "alice"}, RequestReceivedTimestamp: now}
	plain := &Event{Verb: "delete", User: UserInfo{Username: "bob"}, RequestReceivedTimestamp: now}
	for _, c := range []struct {
		name string
		q    Query
		e    *Event
		want bool
	}{
		{"empty query", Query{}, e, true},
		{"by user", Query{User: "admin"}, e, true},
		{"by the user acted as", Query{User: "alice"}, e, true},
		{"another user", Query{User: "carol"}, e, false},
		{"no impersonation", Query{User: "alice"}, plain, false},
		{"by verb", Query{Verb: "create"}, e, true},
		{"another verb", Query{Verb: "delete"}, e, false},
		{"since before", Query{Since: now.Add(-time.Second)}, e, true},
		{"since the same instant", Query{Since: now}, e, true},
		{"since after", Query{Since: now.Add(time.Second)}, e, false},
		{"all of them", Query{User: "bob", Verb: "delete", Since: now}, plain, true},
	} {
		if got := c.q.Matches(c.e); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}
