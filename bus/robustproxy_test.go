package bus_test

// The hold proxy: a TCP relay between a NATS client and server that lets a
// test stop a read at a known point, to lose or hold its consumer's traffic.

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// holdProxy forwards TCP between a NATS client and server and acts when
// the client sends the holdAt-th occurrence of a pattern (a request about
// some consumer), so that a test can act at a known point of a read:
// either it holds the bytes that carry it (the server has not seen the
// request), or it passes them on and holds everything the server sends
// back (the server acts on the request, the client does not hear of it),
// until released.
type holdProxy struct {
	ln          net.Listener
	target      string
	pattern     []byte
	holdAt      int
	holdReplies bool
	held        chan struct{}
	release     chan struct{}
	once        sync.Once
	paused      atomic.Bool

	mu    sync.Mutex
	seen  int
	conns []net.Conn
	// next, when set, is closed at the first nextPattern the client sends
	// after the hold began.
	nextPattern []byte
	next        chan struct{}
}

func startHoldProxy(t *testing.T, target, pattern string, holdAt int, holdReplies bool) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, target: target, pattern: []byte(pattern), holdAt: holdAt, holdReplies: holdReplies,
		held: make(chan struct{}), release: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() {
		p.Release()
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	return p
}

// sentNext returns a channel closed when the client, after the hold began,
// sends pattern; call it before the hold.
func (p *holdProxy) sentNext(pattern string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextPattern, p.next = []byte(pattern), make(chan struct{})
	return p.next
}

func (p *holdProxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *holdProxy) Release() { p.once.Do(func() { close(p.release) }) }

// waitHeld waits until the proxy holds something.
func (p *holdProxy) waitHeld(t *testing.T, what string) {
	t.Helper()
	poll.Receive(t, what, 30*time.Second, p.held)
}

func (p *holdProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go p.pipe(client, server, true)
		go p.pipe(server, client, false)
	}
}

func (p *holdProxy) pipe(src, dst net.Conn, fromClient bool) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	var tail []byte // the end of what was forwarded, for a pattern split across reads
	for {
		n, err := src.Read(buf)
		if n > 0 && fromClient {
			window := append(tail, buf[:n]...)
			found := 0
			for i := 0; ; {
				j := bytes.Index(window[i:], p.pattern)
				if j < 0 {
					break
				}
				if i+j+len(p.pattern) > len(tail) {
					found++
				}
				i += j + 1
			}
			p.mu.Lock()
			if p.next != nil && p.seen >= p.holdAt && bytes.Contains(window, p.nextPattern) {
				close(p.next)
				p.next = nil
			}
			hold := p.seen < p.holdAt && p.seen+found >= p.holdAt
			p.seen += found
			p.mu.Unlock()
			if hold && p.holdReplies {
				p.paused.Store(true) // before the server can have answered
				close(p.held)
			} else if hold {
				close(p.held)
				<-p.release
			}
			tail = append([]byte(nil), window[max(0, len(window)-len(p.pattern)+1):]...)
		}
		if n > 0 && !fromClient && p.paused.Load() {
			<-p.release
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
