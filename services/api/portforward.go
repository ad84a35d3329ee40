package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/kubelet/pkg/cri/streaming/portforward"

	"github.com/homeostat/homeostat/kinds"
)

// Port forwarding: the API speaks the kubelet's protocol to the client
// (SPDY, or the WebSocket channels of older clients), as Kubernetes' API
// server passes it on to the kubelet, and dials the pod itself. A pod
// shares its node's network, so only the ports the pod declares are
// forwarded: the others are its node's, or another pod's.
const (
	forwardIdle           = 4 * time.Hour
	forwardStreamCreation = 30 * time.Second
)

func (s *Service) portForward(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	p, e := podOf(r, ref)
	if e != nil {
		return e
	}
	switch {
	case p.Status.Phase != kinds.PodRunning:
		return badRequest("pod %q is not running (phase %s): there is no process to forward to", ref.name, orPending(p.Status.Phase))
	case p.Status.PodIP == "":
		return badRequest("pod %q has no address yet: its node has not reported it running", ref.name)
	}
	var opts *portforward.V4Options
	if wsstream.IsWebSocketRequest(r) {
		var err error
		if opts, err = portforward.NewV4Options(r); err != nil {
			return badRequest("%v", err)
		}
	}
	f := podForwarder{address: p.Status.PodIP, ports: declaredPorts(p), pod: ref.namespace + "/" + ref.name}
	portforward.ServePortForward(w, r, f, ref.name, types.UID(p.Metadata.UID), opts, forwardIdle, forwardStreamCreation,
		portforward.SupportedProtocols)
	return nil
}

func orPending(phase string) string {
	if phase == "" {
		return kinds.PodPending
	}
	return phase
}

// declaredPorts are the TCP ports a pod's containers declare, with the
// numbers their node gave those declared without one.
func declaredPorts(p *kinds.Pod) map[int32]bool {
	out := map[int32]bool{}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.ContainerPort > 0 && kinds.Protocol(cp.Protocol) == "TCP" {
				out[cp.ContainerPort] = true
			}
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		for _, cp := range cs.Ports {
			if cp.ContainerPort > 0 && kinds.Protocol(cp.Protocol) == "TCP" {
				out[cp.ContainerPort] = true
			}
		}
	}
	return out
}

// podForwarder dials a pod's declared ports at its address.
type podForwarder struct {
	address string
	ports   map[int32]bool
	pod     string
}

func (f podForwarder) PortForward(ctx context.Context, _ string, _ types.UID, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if !f.ports[port] {
		return fmt.Errorf("pod %s declares no TCP port %d: a pod shares its node's network, so only its declared ports are forwarded", f.pod, port)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(f.address, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("pod %s, port %d: %w", f.pod, port, err)
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(stream, conn)
	<-done
	return nil
}
