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
)

func init() {
	prometheus.MustRegister(readRestarts, consumersOpen, consumeRestarts)
}
