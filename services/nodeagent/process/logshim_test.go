package process

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestStampLines(t *testing.T) {
	at := time.Date(2026, 11, 25, 5, 0, 0, 120, time.FixedZone("x", 3600))
	long := strings.Repeat("x", maxLine+10)
	cases := []struct{ in, want string }{
		{"", ""},
		{"a\nb\n", "2026-11-25T04:00:00.000000120Z a\n2026-11-25T04:00:00.000000120Z b\n"},
		{"no end", "2026-11-25T04:00:00.000000120Z no end\n"},
		{"\n", "2026-11-25T04:00:00.000000120Z \n"},
		{long + "\n", "2026-11-25T04:00:00.000000120Z " + long[:maxLine] + "\n2026-11-25T04:00:00.000000120Z " + long[maxLine:] + "\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		if err := stampLines(strings.NewReader(c.in), &out, func() time.Time { return at }); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want {
			t.Errorf("stampLines(%.20q) = %.80q, want %.80q", c.in, out.String(), c.want)
		}
	}
}
