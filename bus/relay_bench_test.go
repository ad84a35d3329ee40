package bus_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

// BenchmarkPodStatus compares a pod's status written straight to the store
// (a host of simulated nodes) with the same write through the node relay
// (a real node's agent): one compare-and-swap against a request, a read
// and a compare-and-swap.
func BenchmarkPodStatus(b *testing.B) {
	ctx := context.Background()
	op, server := operatorBus(b)
	nodeCreds, err := op.NodeCreds("n1")
	if err != nil {
		b.Fatal(err)
	}
	agent, err := server.Join(ctx, bus.Config{Name: "n1", Creds: nodeCreds, Node: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	pods, err := server.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	relay, err := agent.NodeWriter("n1")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func(pod, current *object.Object) (*object.Object, error)
	}{
		{"direct", func(pod, current *object.Object) (*object.Object, error) {
			return pods.Update(ctx, pod, bus.UpdateOptions{Current: current})
		}},
		{"relay", func(pod, current *object.Object) (*object.Object, error) {
			return relay.UpdateStatus(ctx, pod, current)
		}},
	} {
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Namespace: "default", Name: c.name}}
		if err := o.SetSpec(map[string]any{"nodeName": "n1"}); err != nil {
			b.Fatal(err)
		}
		if _, err := pods.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			cur, err := pods.Get(ctx, o.Key())
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := cur.Clone()
				if err := n.SetStatus(map[string]any{"phase": "Running", "message": strconv.Itoa(i)}); err != nil {
					b.Fatal(err)
				}
				if cur, err = c.write(n, cur); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
