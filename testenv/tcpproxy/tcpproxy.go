// Package tcpproxy relays TCP connections from a loopback port to a target
// that can change, and can cut them: the faults of a network between NATS
// nodes (or between a client and its server) for tests and the fault
// harness.
package tcpproxy

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a target, and can
// cut them: Drop closes every connection and refuses new ones (a network
// that answers "no"), Stall keeps them open but moves no bytes (a black
// hole, as a frozen peer or a dead link looks).
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	conns map[net.Conn]struct{}
	cond  *sync.Cond
}

// Mode is what a proxy does with its connections.
type Mode int

// The modes: pass bytes, refuse and close connections, or hold every byte.
const (
	Pass Mode = iota
	Drop
	Stall
)

// New listens on a loopback port and forwards what it accepts to target
// (which may be a placeholder until Retarget). Close ends it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	return p, nil
}

// Addr is the proxy's own address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening and drops every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Set(Drop)
}

// Set changes the mode; dropping closes what is open.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == Drop {
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.cond.Broadcast()
}

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.mode == Drop
		p.mu.Unlock()
		if refused {
			_ = in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", p.dest(), 2*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.track(in, out)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

// pipe copies from src to dst, holding bytes back while stalled.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == Stall {
				p.cond.Wait()
			}
			dropped := p.mode == Drop
			p.mu.Unlock()
			if dropped {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Retarget sends new connections to target; open ones are dropped, since
// the peer they reached is gone.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) dest() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}
