package bustest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// Cluster is three embedded NATS servers in one JetStream cluster, in this
// process. Every route and client connection goes through a loopback proxy,
// so that a stopped server can start again, on new ports, behind the
// addresses its peers and clients already know.
type Cluster struct {
	t       testing.TB
	dirs    [3]string
	routes  [3]*tcpproxy.Proxy // to each server's cluster port
	clients [3]*tcpproxy.Proxy // to each server's client port
	servers [3]*server.Server
}

// NewCluster starts the three servers; they stop when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for i := range 3 {
		c.dirs[i] = t.TempDir()
		var err error
		if c.routes[i], err = tcpproxy.New("127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
		if c.clients[i], err = tcpproxy.New("127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range 3 {
			c.Stop(i)
			c.routes[i].Close()
			c.clients[i].Close()
		}
	})
	for i := range 3 {
		c.Start(i)
	}
	return c
}

// Start starts server i (again) over its store.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	var routes []*url.URL
	for j := range 3 {
		if j != i {
			routes = append(routes, &url.URL{Scheme: "nats", Host: c.routes[j].Addr()})
		}
	}
	s, err := server.NewServer(&server.Options{
		ServerName: fmt.Sprintf("n%d", i),
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   c.dirs[i],
		Cluster: server.ClusterOpts{Name: "bustest", Host: "127.0.0.1", Port: -1,
			// Peers and clients must reach a server only through its proxies.
			Advertise: "127.0.0.1:1", NoAdvertise: true},
		Routes: routes,
		NoLog:  true,
		NoSigs: true,
	})
	if err != nil {
		c.t.Fatalf("server n%d: %v", i, err)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		c.t.Fatalf("server n%d did not start within 30s", i)
	}
	c.routes[i].Retarget(s.ClusterAddr().String())
	c.clients[i].Retarget(s.Addr().String())
	c.servers[i] = s
}

// Stop shuts server i down. It steps down from what it leads first, so
// its peers elect at once; a crash (kill -9) is the fault harness's.
func (c *Cluster) Stop(i int) {
	s := c.servers[i]
	if s == nil {
		return
	}
	c.servers[i] = nil
	c.routes[i].Retarget("127.0.0.1:1")
	c.clients[i].Retarget("127.0.0.1:1")
	s.Shutdown()
	s.WaitForShutdown()
}

// URLs lists the client addresses of the three servers.
func (c *Cluster) URLs() string {
	var us []string
	for _, p := range c.clients {
		us = append(us, "nats://"+p.Addr())
	}
	return strings.Join(us, ",")
}

// Conn connects to the cluster with three replicas of everything, as a
// process of a replicated deployment would, and closes when the test ends.
func (c *Cluster) Conn(t testing.TB) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.Config{URLs: c.URLs(), Name: t.Name(), Replicas: 3})
	if err != nil {
		t.Fatalf("connect to the cluster: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}
