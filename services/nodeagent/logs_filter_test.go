package nodeagent

import (
	"bytes"
	"net/url"
	"testing"
	"time"
)

// A log's lines pass without their time unless asked, those older than
// since are dropped, lines without a time pass as they are, and a line
// split across reads is passed whole.
func TestLineFilter(t *testing.T) {
	log := "2026-11-25T05:00:00.000000000Z early\n" +
		"not stamped\n" +
		"2026-11-25T05:00:02.500000000Z late\n" +
		"2026-11-25T05:00:03.000000000Z last, unfinished"
	since := time.Date(2026, 11, 25, 5, 0, 1, 0, time.UTC)
	cases := []struct {
		opts logOptions
		want string
	}{
		{logOptions{}, "early\nnot stamped\nlate\nlast, unfinished"},
		{logOptions{timestamps: true}, log},
		{logOptions{since: since}, "not stamped\nlate\nlast, unfinished"},
		{logOptions{since: since, timestamps: true},
			"not stamped\n2026-11-25T05:00:02.500000000Z late\n2026-11-25T05:00:03.000000000Z last, unfinished"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		f := &lineFilter{opts: c.opts, out: &out}
		for _, part := range []string{log[:20], log[20:50], log[50:]} {
			if err := f.write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.opts, out.String(), c.want)
		}
	}
}

func TestLogOptionsOf(t *testing.T) {
	now := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	o, err := logOptionsOf(url.Values{"sinceSeconds": {"60"}, "timestamps": {"true"}, "tailLines": {"3"}, "follow": {"1"}}, now)
	if err != nil || !o.since.Equal(now.Add(-time.Minute)) || !o.timestamps || o.tail != 3 || !o.follow {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := logOptionsOf(url.Values{"sinceTime": {"2026-11-25T04:00:00Z"}}, now); err != nil || o.since.Hour() != 4 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []url.Values{{"sinceSeconds": {"0"}}, {"sinceSeconds": {"x"}}, {"sinceTime": {"yesterday"}}} {
		if _, err := logOptionsOf(bad, now); err == nil {
			t.Errorf("%v was taken", bad)
		}
	}
}
