package bus

import (
	"errors"
	"testing"
)

// TestSettle: a compare-and-swap write reports a conflict only when no
// attempt of it can have landed.
func TestSettle(t *testing.T) {
	conflict := wrap(ErrConflict, errors.New("wrong last sequence"))
	unanswered := wrap(ErrUnavailable, errors.New("timeout"))
	refusedRead := errors.New("bad request")
	type want struct {
		landed, again, conflict, unavailable bool
	}
	for _, tc := range []struct {
		name string
		st   casState
		err  error
		want want
	}{
		{"mine stands", casState{expect: 7, now: 9, mine: true}, conflict, want{landed: true}},
		{"mine stands after an unanswered try", casState{expect: 7, uncertain: true, now: 9, mine: true}, conflict, want{landed: true}},
		{"refused, subject moved", casState{expect: 7, now: 9}, conflict, want{conflict: true}},
		{"unanswered once, subject moved, not mine", casState{expect: 7, uncertain: true, now: 9}, conflict, want{unavailable: true}},
		{"unanswered, subject moved, not mine", casState{expect: 7, uncertain: true, now: 9}, unanswered, want{unavailable: true}},
		{"nothing landed yet", casState{expect: 7, now: 7}, conflict, want{again: true}},
		{"unanswered, nothing landed yet", casState{expect: 7, uncertain: true, now: 7}, unanswered, want{again: true}},
		{"leader cannot answer", casState{expect: 7, readErr: unanswered}, conflict, want{again: true}},
		{"leader refuses the read", casState{expect: 7, readErr: refusedRead}, conflict, want{conflict: true}},
		{"leader refuses the read of an uncertain write", casState{expect: 7, uncertain: true, readErr: refusedRead}, conflict, want{unavailable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := settle(tc.st, tc.err)
			got := want{
				landed:      v.landed,
				again:       !v.landed && v.err == nil,
				conflict:    errors.Is(v.err, ErrConflict),
				unavailable: errors.Is(v.err, ErrUnavailable),
			}
			if got != tc.want {
				t.Fatalf("settle(%+v, %v) = %+v (err %v), want %+v", tc.st, tc.err, got, v.err, tc.want)
			}
		})
	}
}

// TestUnknownOutcome: when a write may have landed, its error is
// ErrUnavailable and never a conflict, whatever the last attempt heard.
func TestUnknownOutcome(t *testing.T) {
	conflict := wrap(ErrConflict, errors.New("wrong last sequence"))
	if err := unknownOutcome(false, conflict); !errors.Is(err, ErrConflict) {
		t.Fatalf("a certain conflict became %v", err)
	}
	err := unknownOutcome(true, conflict)
	if errors.Is(err, ErrConflict) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an uncertain conflict became %v: want ErrUnavailable alone", err)
	}
}
