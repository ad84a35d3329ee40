package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func newPortForward(g *globals) *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "port-forward pod/NAME|svc/NAME [LOCAL:]PORT",
		Short: "Forward a local port to a pod's port, or to a ready pod of a Service, through the API",
		Long: `Forward a local port to a pod's port through the API, as kubectl port-forward
does. PORT is a number or the name of a port: of the pod's containers (a port
its node picked is found in its status), or of the Service, whose ready
endpoint's pod and port are used. LOCAL 0, or none, picks a free one.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			local, remote, _ := strings.Cut(args[1], ":")
			if remote == "" {
				remote, local = local, "0"
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			pod, port, err := forwardTarget(cmd.Context(), c, g.namespace, args[0], remote)
			if err != nil {
				return err
			}
			return portForward(cmd.Context(), g, c, pod, port, net.JoinHostPort(address, local), cmd)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	return cmd
}

// forwardTarget resolves what to forward to: a pod and a port number.
func forwardTarget(ctx context.Context, c *client.Client, ns, what, port string) (string, int32, error) {
	kind, name, ok := strings.Cut(what, "/")
	if !ok {
		kind, name = "pod", what
	}
	switch kind {
	case "pod", "pods", "po":
		o, err := get(ctx, c, "pods", ns, name)
		if err != nil {
			return "", 0, err
		}
		p, err := kinds.DecodePod(o)
		if err != nil {
			return "", 0, err
		}
		n, err := podPort(p, port)
		return name, n, err
	case "svc", "service", "services":
		return serviceEndpoint(ctx, c, ns, name, port)
	}
	return "", 0, fmt.Errorf("%s: port-forward reaches pod/NAME or svc/NAME", what)
}

func get(ctx context.Context, c *client.Client, resource, ns, name string) (*object.Object, error) {
	res, err := c.ResourceFor(ctx, resource)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, res, ns, name)
}

// podPort is a port's number: given, or the named port's, as the pod's
// node gave it.
func podPort(p *kinds.Pod, port string) (int32, error) {
	if n, err := strconv.ParseInt(port, 10, 32); err == nil {
		return int32(n), nil
	}
	if n, ok := p.PortNumber(port, ""); ok {
		return n, nil
	}
	return 0, fmt.Errorf("pod %s has no TCP port named %q with a number yet", p.Metadata.Name, port)
}

// serviceEndpoint is a ready endpoint of a Service's port (by number or
// name): its pod, and the port's number there.
func serviceEndpoint(ctx context.Context, c *client.Client, ns, name, port string) (string, int32, error) {
	o, err := get(ctx, c, "services", ns, name)
	if err != nil {
		return "", 0, err
	}
	var spec kinds.ServiceSpec
	if err := o.DecodeSpec(&spec); err != nil {
		return "", 0, err
	}
	var sp *kinds.ServicePort
	for i := range spec.Ports {
		if spec.Ports[i].Name == port || strconv.Itoa(int(spec.Ports[i].Port)) == port {
			sp = &spec.Ports[i]
		}
	}
	if sp == nil {
		return "", 0, fmt.Errorf("service %s has no port %q", name, port)
	}
	res, err := c.ResourceFor(ctx, "endpointslices")
	if err != nil {
		return "", 0, err
	}
	l, err := c.List(ctx, res, ns, client.ListOptions{LabelSelector: kinds.LabelServiceName + "=" + name})
	if err != nil {
		return "", 0, err
	}
	for _, so := range l.Items {
		s, err := kinds.DecodeEndpointSlice(so)
		if err != nil {
			continue
		}
		for _, p := range s.Ports {
			if p.Name != sp.Name || p.Port == 0 {
				continue
			}
			for _, ep := range s.Endpoints {
				if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) && ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
					return ep.TargetRef.Name, p.Port, nil
				}
			}
		}
	}
	return "", 0, fmt.Errorf("service %s has no ready endpoint for port %q (kubectl describe svc %s says why)", name, port, name)
}

// portForward opens the API's port-forward of pod and passes what listen
// accepts to port, until ctx ends.
func portForward(ctx context.Context, g *globals, c *client.Client, pod string, port int32, listen string, cmd *cobra.Command) error {
	_, target, err := g.target()
	if err != nil {
		return err
	}
	up, err := spdy.NewRoundTripper(target.TLS)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.PortForwardPath(g.namespace, pod), nil)
	if err != nil {
		return err
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, client.PortForwardProtocol)
	resp, err := target.Wrap(up).RoundTrip(req)
	if err != nil {
		return err
	}
	if err := client.ResponseError(resp); err != nil {
		return fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	conn, err := up.NewConnection(resp)
	if err != nil {
		return fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	defer conn.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Forwarding from %s -> %d (pod %s)\n", ln.Addr(), port, pod)
	return client.Forward(ctx, conn, ln, port, cmd.ErrOrStderr())
}
