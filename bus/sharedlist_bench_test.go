package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// A list of 10,000 objects of 2 KB that a shared list has read before:
// what the API pays for each list but the first.
func BenchmarkSharedList(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, bustest.Conn(b))
	spec := `{"blob":"` + strings.Repeat("x", 2000) + `"}`
	var objs []*object.Object
	for i := range 10000 {
		objs = append(objs, widget("default", fmt.Sprintf("w%05d", i), spec, map[string]string{"app": "bench"}))
	}
	for i := 0; i < len(objs); i += 500 {
		if _, errs := s.CreateMany(ctx, objs[i:min(i+500, len(objs))], bus.CreateOptions{}); errs != nil {
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	list := func() {
		res, err := s.List(ctx, bus.ListOptions{Shared: true})
		if err != nil || len(res.Items) != len(objs) || len(res.JSON) != len(objs) || !json.Valid(res.JSON[0]) {
			b.Fatalf("list: %v", err)
		}
	}
	list()
	b.ResetTimer()
	for b.Loop() {
		list()
	}
}
