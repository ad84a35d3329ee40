package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echo serves lines back on a loopback port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, timeout time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = errors.New("echoed " + line)
	}
	return err
}

func TestModes(t *testing.T) {
	p, err := New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Retarget(echo(t))

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 10*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}

	p.Set(Stall)
	if err := roundTrip(c, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stall: got %v, want the bytes held (a timeout)", err)
	}
	p.Set(Pass)
	// The held ping comes through now.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after stall: %q, %v", line, err)
	}

	p.Set(Drop)
	if err := roundTrip(c, 10*time.Second); err == nil {
		t.Fatal("drop: the open connection still carried bytes")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		err = roundTrip(c2, 10*time.Second)
		_ = c2.Close()
		if err == nil {
			t.Fatal("drop: a new connection carried bytes")
		}
	}
}

func TestRetargetDropsOpenConnections(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Retarget(echo(t))
	if err := roundTrip(c, 10*time.Second); err == nil {
		t.Fatal("a connection to the old target survived Retarget")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 10*time.Second); err != nil {
		t.Fatalf("new connection after Retarget: %v", err)
	}
}
