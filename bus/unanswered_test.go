package bus_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

// dropProxy relays TCP between a NATS client and server and drops the
// first request the client publishes to a subject starting with prefix,
// as a request sent to a stream with no leader is lost: the server never
// sees it and nothing answers.
type dropProxy struct {
	ln      net.Listener
	target  string
	pattern []byte
	dropped atomic.Int32
}

func startDropProxy(t *testing.T, target, prefix string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target, pattern: []byte("PUB " + prefix)}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			conns = append(conns, client, server)
			go p.toServer(client, server)
			go func() { defer client.Close(); _, _ = io.Copy(client, server) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return p
}

func (p *dropProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// toServer forwards the client's protocol, cutting out the first frame
// "PUB <subject> <reply> <size>\r\n<payload>\r\n" that matches. It holds
// back only what may be the start of that frame, so that nothing else
// waits on it.
func (p *dropProxy) toServer(client, server net.Conn) {
	defer server.Close()
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := client.Read(buf)
		pending = append(pending, buf[:n]...)
		if p.dropped.Load() == 0 {
			pending = p.cut(pending)
		}
		keep := 0
		if p.dropped.Load() == 0 {
			keep = partial(pending, p.pattern)
		}
		if i := bytes.Index(pending, p.pattern); i >= 0 && p.dropped.Load() == 0 {
			keep = len(pending) - i // an incomplete frame: wait for the rest
		}
		if out := pending[:len(pending)-keep]; len(out) > 0 {
			if _, werr := server.Write(out); werr != nil {
				return
			}
		}
		pending = append([]byte(nil), pending[len(pending)-keep:]...)
		if err != nil {
			return
		}
	}
}

// cut removes the first complete matching frame from b.
func (p *dropProxy) cut(b []byte) []byte {
	i := bytes.Index(b, p.pattern)
	if i < 0 {
		return b
	}
	eol := bytes.Index(b[i:], []byte("\r\n"))
	if eol < 0 {
		return b
	}
	fields := bytes.Fields(b[i : i+eol])
	size, err := strconv.Atoi(string(fields[len(fields)-1]))
	end := i + eol + 2 + size + 2
	if err != nil || end > len(b) {
		return b
	}
	p.dropped.Add(1)
	return append(append([]byte(nil), b[:i]...), b[end:]...)
}

// partial is the length of the longest end of b that begins pattern.
func partial(b, pattern []byte) int {
	for k := min(len(b), len(pattern)-1); k > 0; k-- {
		if bytes.HasSuffix(b, pattern[:k]) {
			return k
		}
	}
	return 0
}

// A read from a stream's leader whose request is lost (made while there
// was no leader) is made again after a second, and answered, instead of
// waiting out the whole bound on an answer that cannot come.
func TestLeaderReadMadeAgainWhenUnanswered(t *testing.T) {
	ctx := context.Background()
	const resource = "unanswered.example.com"
	srv := bustest.Conn(t)
	if _, err := openStore(t, srv, resource).Create(ctx, widget("default", "w", `{"v":1}`, nil)); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := startDropProxy(t, u.Host, "$JS.API.STREAM.MSG.GET."+streamOf(resource))
	client, err := bus.Connect(ctx, bus.Config{URLs: proxy.URL(), Name: t.Name() + "-proxied"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	s := openStore(t, client, resource)

	// A deadline of its own, under the five seconds every request gets, so
	// that waiting it out shows in the error.
	gctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	o, err := s.Get(gctx, "default.w")
	if err != nil {
		t.Fatalf("Get = %v: it waited on the lost request instead of making it again", err)
	}
	if string(o.Spec) != `{"v":1}` || proxy.dropped.Load() != 1 {
		t.Fatalf("Get = %s after %d dropped requests, want {\"v\":1} after 1", o.Spec, proxy.dropped.Load())
	}
}
