package proxy

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homeostat/homeostat/kinds"
)

// Env is what a pod of namespace starting on this node is told of the
// namespace's Services, as Kubernetes' kubelet tells it: for each Service
// whose ports the proxy serves, where its proxy listens. A Service made
// after the pod started is not in it; a client finds that one by name.
// It first gives the proxy's watch of Services a moment to reach the
// present, as the kubelet waits for its Services to sync.
func (p *Proxy) Env(ctx context.Context, namespace string) []kinds.EnvVar {
	p.mu.Lock()
	svcs := p.svcs
	p.mu.Unlock()
	if svcs == nil {
		return nil
	}
	if rev, err := svcs.Store().LeaderRevision(ctx); err == nil {
		svcs.WaitForRevision(ctx, rev, 2*time.Second)
	}
	all := kinds.DecodedServices(svcs)
	sort.Slice(all, func(i, j int) bool { return all[i].Object.Metadata.Name < all[j].Object.Metadata.Name })
	var env []kinds.EnvVar
	for _, s := range all {
		if s.Object.Metadata.Namespace != namespace || s.Spec == nil || s.Object.Metadata.Deleting() {
			continue
		}
		var held []kinds.ServicePort
		for _, sp := range s.Spec.ProxiedPorts() {
			if h := kinds.PortHolder(sp.Port, all); h != nil && h.Key() == s.Object.Key() {
				held = append(held, sp)
			}
		}
		env = append(env, serviceEnv(s.Object.Metadata.Name, p.cfg.Address, held)...)
	}
	return env
}

// serviceEnv are the variables of one Service reached at host on ports,
// named as Kubernetes names them: NAME_SERVICE_HOST and _PORT (its first
// port), _SERVICE_PORT_<PORT NAME>, and Docker's link variables.
func serviceEnv(name, host string, ports []kinds.ServicePort) []kinds.EnvVar {
	if len(ports) == 0 {
		return nil
	}
	prefix := envPrefix(name)
	num := func(p kinds.ServicePort) string { return strconv.Itoa(int(p.Port)) }
	env := []kinds.EnvVar{{Name: prefix + "_SERVICE_HOST", Value: host}, {Name: prefix + "_SERVICE_PORT", Value: num(ports[0])}}
	for _, p := range ports {
		if p.Name != "" {
			env = append(env, kinds.EnvVar{Name: prefix + "_SERVICE_PORT_" + envPrefix(p.Name), Value: num(p)})
		}
	}
	env = append(env, kinds.EnvVar{Name: prefix + "_PORT", Value: "tcp://" + host + ":" + num(ports[0])})
	for _, p := range ports {
		link := prefix + "_PORT_" + num(p) + "_TCP"
		env = append(env, kinds.EnvVar{Name: link, Value: "tcp://" + host + ":" + num(p)},
			kinds.EnvVar{Name: link + "_PROTO", Value: "tcp"}, kinds.EnvVar{Name: link + "_PORT", Value: num(p)},
			kinds.EnvVar{Name: link + "_ADDR", Value: host})
	}
	return env
}

func envPrefix(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }
