package bus

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The bus's metrics, on the default registry.
var (
	readRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_bus_read_restarts_total",
		Help: "Watches and reads that lost their delivery (missed heartbeats, a sequence gap, an unavailable bus) and resumed with a new consumer.",
	}, []string{"stream", "reason"})
	consumersOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "homeostat_bus_consumers_open",
		Help: "JetStream consumers this process holds open for reads and watches.",
	})
	consumeRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_bus_queue_consume_restarts_total",
		Help: "Times a work queue's consumption failed and started again.",
	}, []string{"queue"})
	sharedWatchers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_bus_shared_watchers",
		Help: "Watches served by their store's shared read (see homeostat_bus_consumers_open for those reading alone).",
	}, []string{"stream"})
	sharedWatchersAlone = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_bus_shared_watchers_alone_total",
		Help: "Watches that left their store's shared read to go on alone: behind its ring of changes (slow), or the read ended (ended).",
	}, []string{"stream", "reason"})
	storeWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_bus_writes_total",
		Help: "Messages this process stored in the bus's streams, by stream as Conn.Writes names them: acknowledged writes (a duplicate the stream dropped is not counted), and history entries, spans and audit records of refused requests as they are handed over.",
	}, []string{"stream"})
	relayRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_node_relay_refusals_total",
		Help: "Requests the node relay refused: forbidden (not the node's pod, or not being deleted), dropped (not sent by the node's agent), or throttled (a node's heartbeats past their rate).",
	}, []string{"reason"})
)

func init() {
	prometheus.MustRegister(readRestarts, consumersOpen, consumeRestarts, sharedWatchers, sharedWatchersAlone, relayRefusals, storeWrites)
}

// writeCounters holds storeWrites' counter of each stream, by the stream's
// own name: a write is counted without naming its label again.
var writeCounters sync.Map

// wrote counts a message stored in stream by this process, so that the
// writes to the bus can be told apart by writer (each process serves its
// own metrics), not only by stream. When nothing fails, the counts of
// every process add up to what the streams took. They do not count the
// server's own markers (a lease expiring), a write whose answer was lost
// and whose outcome stays unknown, nor one that lands after its writer
// stopped waiting; a retried write without an id whose first attempt
// landed unanswered is stored twice and counted once.
func wrote(stream string) {
	c, ok := writeCounters.Load(stream)
	if !ok {
		c, _ = writeCounters.LoadOrStore(stream, storeWrites.WithLabelValues(streamLabel(stream)))
	}
	c.(prometheus.Counter).Inc()
}

// wroteAck counts the write an acknowledgement answers, unless the stream
// dropped it as a duplicate of one stored already.
func wroteAck(ack *jetstream.PubAck) {
	if ack != nil && !ack.Duplicate {
		wrote(ack.Stream)
	}
}
