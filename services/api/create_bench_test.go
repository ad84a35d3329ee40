package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus/bustest"
)

// BenchmarkCreate: creates through the API over HTTPS, one after another
// from one client, as the bench's probe makes them from many; the time is
// the client's and the API's together, on one machine.
func BenchmarkCreate(b *testing.B) {
	conn := bustest.Conn(b)
	base := startAPI(b, conn)
	cases := []struct{ name, path, doc string }{
		{"configmap", "/api/v1/namespaces/default/configmaps",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-%d","namespace":"default"},"data":{"k":"v"}}`},
		{"deployment", "/apis/apps/v1/namespaces/default/deployments",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-%d","namespace":"default"},
"spec":{"replicas":0,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},
"spec":{"containers":[{"name":"c","command":["sleep","infinity"],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}`},
	}
	c := admin(b)
	n := 0
	create := func(path, doc string) {
		n++
		resp, err := c.Post(base+path, "application/json", bytes.NewBufferString(fmt.Sprintf(doc, n)))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range 5 {
				create(tc.path, tc.doc) // warm the connection and the caches
			}
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				create(tc.path, tc.doc)
			}
			// The process's CPU a create, the client's with the API's and
			// the store's: on one machine the wall time is mostly waiting.
			b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the CPU the process has used, in user and system time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
