package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/homeostat/homeostat/bus"
)

// junk are values that are not objects of their key: what a buggy writer,
// or anyone with access to the NATS port, could leave in a bucket.
var junk = []string{
	`{not json`,
	`null`,
	`[]`,
	`{"apiVersion":"chaos.example.com/v1","kind":"Register","metadata":{"name":"someone-else","namespace":"chaos"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"chaos"}}`,
	"\x00\xff\xfe",
}

// writeBadValues writes n bad values under fresh keys of the registers
// (never the keys the clients use, whose histories the checker reads)
// through a connection of its own (cfg, named here), and returns their
// keys.
func writeBadValues(ctx context.Context, cfg bus.Config, n int) ([]string, error) {
	if cfg.URLs == "" {
		return nil, fmt.Errorf("chaos: no NATS address to write bad values through")
	}
	cfg.Name = "chaos-bad-values"
	conn, err := bus.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st, err := conn.Store(ctx, bus.StoreSpec{Resource: registers.GroupResource(), Kind: registers.Kind, Namespaced: true})
	if err != nil {
		return nil, err
	}
	var keys []string
	for range n {
		name := fmt.Sprintf("bad-%d", rand.IntN(1<<30))
		v := junk[rand.IntN(len(junk))]
		if _, err := st.PutRaw(ctx, namespace+"."+name, fmt.Appendf(nil, v, name)); err != nil {
			return keys, err
		}
		keys = append(keys, name)
	}
	return keys, nil
}
