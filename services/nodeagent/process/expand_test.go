package process

import "testing"

func TestExpand(t *testing.T) {
	env := envLookup([]string{"A=1", "ROOT=/r", "A=2"})
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "2"},
		{"$(ROOT)/etc/x", "/r/etc/x"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$(UNSET)", "$(UNSET)"},
		{"$(A", "$(A"},
		{"cost $5", "cost $5"},
		{"end$", "end$"},
		{"$(A)$(A)", "22"},
		{"$(ROOT)$(UNSET)$(A)", "/r$(UNSET)2"},
	}
	for _, c := range cases {
		if got := expand(c.in, env); got != c.want {
			t.Errorf("expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
