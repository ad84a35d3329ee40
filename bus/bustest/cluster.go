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
// addresses its peers and clients already know, and so that a server can
// be cut off from its peers while its clients still reach it.
type Cluster struct {
	t       testing.TB
	dirs    [3]string
	routes  [3][3]*tcpproxy.Proxy // routes[i][j]: server i's way to server j's cluster port
	clients [3]*tcpproxy.Proxy    // to each server's client port
	servers [3]*server.Server
}

// NewCluster starts the three servers; they stop when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for i := range 3 {
		c.dirs[i] = t.TempDir()
		var err error
		for j := range 3 {
			if j != i {
				if c.routes[i][j], err = tcpproxy.New("127.0.0.1:1"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if c.clients[i], err = tcpproxy.New("127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range 3 {
			c.Stop(i)
			c.clients[i].Close()
			for j := range 3 {
				if j != i {
					c.routes[i][j].Close()
				}
			}
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
			routes = append(routes, &url.URL{Scheme: "nats", Host: c.routes[i][j].Addr()})
		}
	}
	s, err := server.NewServer(&server.Options{
		ServerName: c.Name(i),
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
	for j := range 3 {
		if j != i {
			c.routes[j][i].Retarget(s.ClusterAddr().String())
		}
	}
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
	for j := range 3 {
		if j != i {
			c.routes[j][i].Retarget("127.0.0.1:1")
		}
	}
	c.clients[i].Retarget("127.0.0.1:1")
	s.Shutdown()
	s.WaitForShutdown()
}

// Cut sets every route between server i and its peers to mode
// (tcpproxy.Drop or Stall cut it off, Pass heals it); its clients still
// reach it, as those of a server on the wrong side of a partition do.
func (c *Cluster) Cut(i int, mode tcpproxy.Mode) {
	for j := range 3 {
		if j != i {
			c.routes[i][j].Set(mode)
			c.routes[j][i].Set(mode)
		}
	}
}

// URLs lists the client addresses of the servers given, or of all three.
func (c *Cluster) URLs(servers ...int) string {
	if len(servers) == 0 {
		servers = []int{0, 1, 2}
	}
	var us []string
	for _, i := range servers {
		us = append(us, "nats://"+c.clients[i].Addr())
	}
	return strings.Join(us, ",")
}

// Name is server i's name, as a stream's cluster information gives its
// leader.
func (c *Cluster) Name(i int) string { return fmt.Sprintf("n%d", i) }

// Conn connects to the cluster with three replicas of everything, as a
// process of a replicated deployment would, and closes when the test ends:
// through the servers given, or any of the three.
func (c *Cluster) Conn(t testing.TB, servers ...int) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.Config{URLs: c.URLs(servers...), Name: t.Name(), Replicas: 3})
	if err != nil {
		t.Fatalf("connect to the cluster: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}
