package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// A node's agent gets the ConfigMaps and Secrets its pods refer to through
// the relay, never by reading their buckets: its credentials allow neither,
// and the relay gives a node only what a pod bound to it names, from the
// pod's own namespace (what Kubernetes' node authorizer allows a kubelet).

// PodConfig is what a pod's spec refers to, those of it that exist, by
// name; a name missing here is missing from the store.
type PodConfig struct {
	ConfigMaps map[string]*object.Object `json:"configMaps,omitempty"`
	Secrets    map[string]*object.Object `json:"secrets,omitempty"`
}

// getter reads one object.
type getter interface {
	Get(ctx context.Context, key string) (*object.Object, error)
}

// configStores are the stores a pod's configuration is read from.
type configStores struct{ configMaps, secrets getter }

func openConfigStores(ctx context.Context, c *Conn) (configStores, error) {
	cms, err := c.Store(ctx, StoreSpec{Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		return configStores{}, err
	}
	secs, err := c.Store(ctx, StoreSpec{Resource: "secrets", Kind: "Secret", Namespaced: true})
	if err != nil {
		return configStores{}, err
	}
	return configStores{configMaps: cms, secrets: secs}, nil
}

// read fetches what pod's spec names.
func (s configStores) read(ctx context.Context, pod *object.Object) (*PodConfig, error) {
	var spec kinds.PodSpec
	if err := pod.DecodeSpec(&spec); err != nil {
		return nil, fmt.Errorf("%w: pod %s: %v", ErrInvalid, pod.Key(), err)
	}
	cms, secs := spec.ConfigRefs()
	out := &PodConfig{}
	var err error
	if out.ConfigMaps, err = readAll(ctx, s.configMaps, pod.Metadata.Namespace, cms); err != nil {
		return nil, err
	}
	if out.Secrets, err = readAll(ctx, s.secrets, pod.Metadata.Namespace, secs); err != nil {
		return nil, err
	}
	return out, nil
}

func readAll(ctx context.Context, st getter, ns string, names []string) (map[string]*object.Object, error) {
	out := map[string]*object.Object{}
	for _, n := range names {
		o, err := st.Get(ctx, ns+"."+n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[n] = o
	}
	return out, nil
}

// PodConfig fetches, through the relay, what the pod refers to. The relay
// reads the pod itself: only its key and uid are taken from pod.
func (w *NodeWriter) PodConfig(ctx context.Context, pod *object.Object) (*PodConfig, error) {
	rep, err := w.conn.askRelay(ctx, "node relay", w.subject, relayRequest{Op: "config", Key: pod.Key(), UID: pod.Metadata.UID})
	if err != nil {
		return nil, err
	}
	if rep.Config == nil {
		return &PodConfig{}, nil
	}
	return rep.Config, nil
}

// ConfigReader reads pods' configuration straight from the store, for a
// host trusted with it (one of simulated nodes).
type ConfigReader struct{ stores configStores }

// ConfigReader opens the stores of pods' configuration.
func (c *Conn) ConfigReader(ctx context.Context) (*ConfigReader, error) {
	s, err := openConfigStores(ctx, c)
	if err != nil {
		return nil, err
	}
	return &ConfigReader{stores: s}, nil
}

// PodConfig reads what pod refers to.
func (r *ConfigReader) PodConfig(ctx context.Context, pod *object.Object) (*PodConfig, error) {
	return r.stores.read(ctx, pod)
}
