package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/httpstream"
)

// The port-forward protocol's stream headers, as Kubernetes' core/v1
// names them.
const (
	streamTypeHeader = "streamType"
	streamTypeError  = "error"
	streamTypeData   = "data"
	portHeader       = "port"
	requestIDHeader  = "requestID"
)

// PortForwardProtocol is the protocol a port-forward connection asks for.
const PortForwardProtocol = "portforward.k8s.io"

// PortForwardPath is the API's port-forward of a pod.
func (c *Client) PortForwardPath(namespace, pod string) string {
	return c.base + "/api/v1/namespaces/" + namespace + "/pods/" + pod + "/portforward"
}

// Forward passes every connection ln accepts to port of the pod at the
// other end of conn (the API's port-forward), each on a pair of streams
// of its own, until ctx ends or conn closes. A connection the pod's end
// refuses is closed, and said on errs.
func Forward(ctx context.Context, conn httpstream.Connection, ln net.Listener, port int32, errs io.Writer) error {
	var ids atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	go func() {
		select {
		case <-conn.CloseChan():
			_ = ln.Close()
		case <-ctx.Done():
		}
	}()
	for {
		local, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			select {
			case <-conn.CloseChan():
				return errors.New("the API closed the port-forward connection")
			default:
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := forwardOne(conn, local, port, ids.Add(1)); err != nil {
				fmt.Fprintf(errs, "forwarding a connection to port %d: %v\n", port, err)
			}
		}()
	}
}

// forwardOne passes one local connection on: an error stream, which the
// far end writes why it failed to, then the data stream.
func forwardOne(conn httpstream.Connection, local net.Conn, port int32, id int64) error {
	defer local.Close()
	h := http.Header{}
	h.Set(streamTypeHeader, streamTypeError)
	h.Set(portHeader, strconv.Itoa(int(port)))
	h.Set(requestIDHeader, strconv.FormatInt(id, 10))
	errStream, err := conn.CreateStream(h)
	if err != nil {
		return err
	}
	_ = errStream.Close() // nothing is written to it from this end
	defer conn.RemoveStreams(errStream)
	farErr := make(chan error, 1)
	go func() {
		msg, err := io.ReadAll(errStream)
		switch {
		case err != nil:
			farErr <- err
		case len(msg) > 0:
			farErr <- errors.New(string(msg))
		default:
			farErr <- nil
		}
	}()
	h.Set(streamTypeHeader, streamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		return err
	}
	defer conn.RemoveStreams(data)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.Copy(data, local)
		_ = data.Close()
	}()
	_, _ = io.Copy(local, data)
	// The far end is done: so is the local connection, whose reader
	// above ends with it.
	_ = local.Close()
	data.Reset()
	<-sent
	return <-farErr
}

// ResponseError is the Status of an answer that refused an upgrade, or
// nil when it did not refuse.
func ResponseError(resp *http.Response) error {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return statusError(resp.StatusCode, data)
}
