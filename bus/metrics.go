package bus

import "github.com/prometheus/client_golang/prometheus"

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
	relayRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_node_relay_refusals_total",
		Help: "Writes the node relay refused: forbidden (not the node's pod, or not being deleted), or dropped (not sent by the node's agent).",
	}, []string{"reason"})
)

func init() {
	prometheus.MustRegister(readRestarts, consumersOpen, consumeRestarts, sharedWatchers, sharedWatchersAlone, relayRefusals)
}
