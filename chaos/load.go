package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
)

// LoadOptions describe a read load: Lists lists and Watches watches (each
// reading the whole initial state, then closed) of Objects objects, at most
// Concurrency at a time, against `homeostat up`.
type LoadOptions struct {
	Dir, Bin                             string
	Objects, Lists, Watches, Concurrency int
	Log                                  func(format string, args ...any)
}

// LoadReport is what a read load did to the system.
type LoadReport struct {
	Opts                            LoadOptions
	Errors                          int
	FirstErrors                     []string
	Elapsed                         time.Duration
	List, Watch                     latency
	ConsumersResting, ConsumersPeak int
	ConsumersAfter                  int
	SettledIn                       time.Duration
	IdleRSS, PeakRSS                int64 // bytes, of the up process (NATS embedded)
}

// Failed reports whether the load broke anything: an error, or consumers
// that did not return to their resting level.
func (r *LoadReport) Failed() bool {
	return r.Errors > 0 || r.ConsumersAfter > r.ConsumersResting
}

func (r *LoadReport) String() string {
	return fmt.Sprintf(`read load: %d lists and %d watches of %d objects, %d at a time, in %s
  errors:        %d %v
  list latency:  %s
  watch latency: %s (to the end of the initial state)
  consumers on the stream: %d resting, %d at peak, %d after (back in %s)
  memory of up (NATS embedded): %d MiB idle, %d MiB at peak (%.2f×)`,
		r.Opts.Lists, r.Opts.Watches, r.Opts.Objects, r.Opts.Concurrency, r.Elapsed.Round(100*time.Millisecond),
		r.Errors, r.FirstErrors, r.List, r.Watch, r.ConsumersResting, r.ConsumersPeak, r.ConsumersAfter,
		r.SettledIn.Round(100*time.Millisecond), r.IdleRSS>>20, r.PeakRSS>>20, float64(r.PeakRSS)/float64(max(r.IdleRSS, 1)))
}

// ReadLoad runs a read load against a fresh `homeostat up`.
func ReadLoad(ctx context.Context, opts LoadOptions) (*LoadReport, error) {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	sys, err := startSingle(ctx, opts.Dir, opts.Bin)
	if err != nil {
		return nil, err
	}
	defer sys.close()
	if err := setup(ctx, sys); err != nil {
		return nil, err
	}
	c := sys.client(0)
	for i := range opts.Objects {
		if _, err := c.Create(ctx, registers, register(fmt.Sprintf("o%d", i), "v", "")); err != nil {
			return nil, err
		}
	}
	cfg, err := sys.busConfig("chaos-load")
	if err != nil {
		return nil, err
	}
	conn, err := bus.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st, err := conn.Store(ctx, bus.StoreSpec{Resource: registers.GroupResource(), Kind: registers.Kind, Namespaced: true})
	if err != nil {
		return nil, err
	}
	rep := &LoadReport{Opts: opts}
	if rep.ConsumersResting, err = st.ConsumerCount(ctx); err != nil {
		return nil, err
	}
	pid := sys.up.pid()
	rep.IdleRSS = rss(pid)
	opts.Log("idle: %d consumers, %d MiB; loading", rep.ConsumersResting, rep.IdleRSS>>20)

	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for clock.Sleep(sctx, 100*time.Millisecond) {
			if n, err := st.ConsumerCount(sctx); err == nil {
				rep.ConsumersPeak = max(rep.ConsumersPeak, n)
			}
			rep.PeakRSS = max(rep.PeakRSS, rss(pid))
		}
	}()
	start := time.Now()
	rep.List, rep.Watch = runReads(ctx, c, opts, rep)
	rep.Elapsed = time.Since(start)
	stopSampling()
	<-sampled

	settle := time.Now()
	for {
		n, err := st.ConsumerCount(ctx)
		if err == nil {
			rep.ConsumersAfter = n
			if n <= rep.ConsumersResting {
				break
			}
		}
		if time.Since(settle) > time.Minute || !clock.Sleep(ctx, 100*time.Millisecond) {
			break
		}
	}
	rep.SettledIn = time.Since(settle)
	return rep, nil
}

// runReads runs the lists and watches, shuffled, with at most Concurrency
// at once.
func runReads(ctx context.Context, c *client.Client, opts LoadOptions, rep *LoadReport) (latency, latency) {
	isList := make([]bool, opts.Lists+opts.Watches)
	for i := range opts.Lists {
		isList[i] = true
	}
	rand.Shuffle(len(isList), func(i, j int) { isList[i], isList[j] = isList[j], isList[i] })
	var mu sync.Mutex
	var lists, watches []time.Duration
	var next atomic.Int64
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(isList)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				began := time.Now()
				var err error
				if isList[i] {
					err = listAll(ctx, c, opts.Objects)
				} else {
					err = watchInitial(ctx, c, opts.Objects)
				}
				d := time.Since(began)
				mu.Lock()
				switch {
				case err != nil:
					rep.Errors++
					if len(rep.FirstErrors) < 5 {
						rep.FirstErrors = append(rep.FirstErrors, err.Error())
					}
				case isList[i]:
					lists = append(lists, d)
				default:
					watches = append(watches, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return latencyOf(lists), latencyOf(watches)
}

func listAll(ctx context.Context, c *client.Client, want int) error {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := c.List(rctx, registers, namespace, client.ListOptions{})
	if err != nil {
		return err
	}
	if len(l.Items) != want {
		return fmt.Errorf("a list held %d objects, not %d", len(l.Items), want)
	}
	return nil
}

// watchInitial opens a watch, reads the initial state, and closes it.
func watchInitial(ctx context.Context, c *client.Client, want int) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	events, err := c.Watch(wctx, registers, namespace, "", client.ListOptions{}, "")
	if err != nil {
		return err
	}
	n := 0
	for ev := range events {
		if ev.Type == "ADDED" {
			n++
		}
		if n == want {
			return nil
		}
	}
	return fmt.Errorf("a watch ended after %d of %d objects: %v", n, want, wctx.Err())
}

// rss is a process's resident memory in bytes, 0 if unknown.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
