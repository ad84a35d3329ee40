package openapi_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/testenv/poll"
)

func TestPrune(t *testing.T) {
	reg, d := documents(t)
	pods, _ := reg.Lookup("", "v1", "pods")
	widgets, _ := reg.Lookup("example.com", "v1", "widgets")
	podType := reflect.TypeFor[corev1.Pod]()
	cases := []struct {
		name, doc, left string
		custom          bool
		unknown         []string
		ignored         []string
		inert           []string
	}{
		{name: "a known pod keeps everything",
			doc:  `{"kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","command":["x"]}]}}`,
			left: `{"kind":"Pod","metadata":{"labels":{"a":"b"},"name":"p"},"spec":{"containers":[{"command":["x"],"name":"c"}]}}`},
		{name: "a Kubernetes field is ignored, a made-up one unknown",
			doc:     `{"spec":{"dnsPolicy":"ClusterFirst","madeUp":1,"containers":[{"name":"c","stdin":true,"nonsense":2}]}}`,
			left:    `{"spec":{"containers":[{"name":"c"}]}}`,
			unknown: []string{"spec.containers[0].nonsense", "spec.madeUp"}, ignored: []string{"spec.containers[0].stdin", "spec.dnsPolicy"}},
		{name: "empty Kubernetes fields ask for nothing",
			doc:  `{"metadata":{"creationTimestamp":null,"selfLink":""},"spec":{"containers":[]},"status":{}}`,
			left: `{"metadata":{"creationTimestamp":null},"spec":{"containers":[]},"status":{}}`},
		{name: "map values are walked with the map's schema",
			doc:     `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"},"claims":[{"name":"x"}],"bogus":{}}}]}}`,
			left:    `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`,
			unknown: []string{"spec.containers[0].resources.bogus"}, ignored: []string{"spec.containers[0].resources.claims"}},
		{name: "an image is kept and named",
			doc:   `{"spec":{"containers":[{"name":"c","image":"nginx"},{"name":"d","image":""}]}}`,
			left:  `{"spec":{"containers":[{"image":"nginx","name":"c"},{"image":"","name":"d"}]}}`,
			inert: []string{"spec.containers[0].image"}},
		{name: "a custom kind is pruned as a structural schema prunes",
			doc: `{"kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"shape":"round"}}`, custom: true,
			left:    `{"kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`,
			unknown: []string{"spec.shape"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			res, kube := pods, podType
			if tc.custom {
				res, kube = widgets, nil
			}
			p := d.Prune(res, doc, kube)
			var inert []string
			for _, f := range p.Inert {
				inert = append(inert, f.Path)
			}
			if !slices.Equal(p.Unknown, tc.unknown) || !slices.Equal(p.Ignored, tc.ignored) || !slices.Equal(inert, tc.inert) {
				t.Errorf("unknown %q ignored %q inert %q; want %q %q %q", p.Unknown, p.Ignored, inert, tc.unknown, tc.ignored, tc.inert)
			}
			if b, _ := json.Marshal(doc); string(b) != tc.left {
				t.Errorf("left\n got %s\nwant %s", b, tc.left)
			}
		})
	}
}

// A custom kind's definition that is only a reference to itself leads
// nowhere: pruning under it ends, and prunes nothing there.
func TestPruneEndsOnAReferenceToItself(t *testing.T) {
	reg, d := documentsWith(t, `{"apiVersion":"homeostat.io/v1","kind":"ResourceDefinition",
		"metadata":{"name":"loops.example.com"},
		"spec":{"group":"example.com","version":"v1","kind":"Loop","plural":"loops",
		"schema":{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"properties":{"spec":{"$ref":"#/$defs/a"}}}}}`)
	res, ok := reg.Lookup("example.com", "v1", "loops")
	if !ok {
		t.Fatal("no loops")
	}
	done := make(chan openapi.Pruned, 1)
	go func() {
		var doc map[string]any
		if err := json.Unmarshal([]byte(`{"kind":"Loop","metadata":{"name":"l"},"spec":{"x":{"y":1},"z":[{}]}}`), &doc); err != nil {
			panic(err)
		}
		done <- d.Prune(res, doc, nil)
	}()
	p := poll.Receive(t, "pruning a kind whose schema refers to itself", 10*time.Second, done)
	if len(p.Unknown)+len(p.Ignored) > 0 {
		t.Errorf("pruned %v under a reference that leads nowhere", p)
	}
}
