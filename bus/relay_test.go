package bus

import (
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
)

func TestMayWrite(t *testing.T) {
	now := time.Now()
	pod := func(node string, deleting bool) *object.Object {
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Namespace: "default", Name: "p"}}
		if err := o.SetSpec(map[string]any{"nodeName": node}); err != nil {
			t.Fatal(err)
		}
		if deleting {
			o.Metadata.DeletionTimestamp = &now
		}
		return o
	}
	for _, c := range []struct {
		name   string
		node   string
		op     string
		stored *object.Object
		want   error
	}{
		{"status of its own pod", "n1", "status", pod("n1", false), nil},
		{"status of its own pod being deleted", "n1", "status", pod("n1", true), nil},
		{"status of another node's pod", "n1", "status", pod("n2", false), ErrForbidden},
		{"status of an unbound pod", "n1", "status", pod("", false), ErrForbidden},
		{"status of a pod on a node whose name it prefixes", "n1", "status", pod("n1.b", false), ErrForbidden},
		{"removal of its own pod being deleted", "n1", "remove", pod("n1", true), nil},
		{"removal of its own pod not being deleted", "n1", "remove", pod("n1", false), ErrForbidden},
		{"removal of another node's pod being deleted", "n1", "remove", pod("n2", true), ErrForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mayWrite(c.node, relayRequest{Op: c.op}, c.stored)
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("mayWrite = %v, want %v", err, c.want)
			}
		})
	}
}

func TestNodeToken(t *testing.T) {
	for _, c := range []struct{ node, token string }{
		{"n1", "n1"}, {"a.b", "a_b"}, {"worker-1.example.com", "worker-1_example_com"},
	} {
		if got := nodeToken(c.node); got != c.token {
			t.Errorf("nodeToken(%q) = %q, want %q", c.node, got, c.token)
		}
		if got := tokenNode(c.token); got != c.node {
			t.Errorf("tokenNode(%q) = %q, want %q", c.token, got, c.node)
		}
		if err := validNodeName(c.node); err != nil {
			t.Errorf("validNodeName(%q): %v", c.node, err)
		}
		for _, subj := range []string{relaySubject(c.node), heartbeatSubject(c.node)} {
			if got := relayNode(subj); got != c.node {
				t.Errorf("relayNode(%q) = %q, want %q", subj, got, c.node)
			}
		}
	}
	for _, bad := range []string{"", "a_b", "A", "a.>", "a.*", "a b", "-a", "a..b"} {
		if err := validNodeName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("validNodeName(%q) = %v, want invalid", bad, err)
		}
	}
}
