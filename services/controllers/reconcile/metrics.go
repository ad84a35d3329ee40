package reconcile

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The runtime's metrics, registered once per process on the default
// registry and labelled by controller (or kind, for informers).
var (
	metricsOnce sync.Once

	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_workqueue_depth", Help: "Keys waiting in a controller's work queue.",
	}, []string{"controller"})
	queueInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_workqueue_in_flight", Help: "Keys being reconciled or waiting out a backoff.",
	}, []string{"controller"})
	queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_workqueue_adds_total", Help: "Keys added to a work queue: direct enqueues and first deliveries of sourced writes.",
	}, []string{"controller"})
	queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_workqueue_retries_total", Help: "Keys handed back for a retry with backoff.",
	}, []string{"controller"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "homeostat_reconcile_duration_seconds", Help: "Time spent in Reconcile.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"controller", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_reconcile_errors_total", Help: "Reconciles that returned an error.",
	}, []string{"controller"})
	informerSynced = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_informer_synced", Help: "1 once an informer has loaded its initial list.",
	}, []string{"kind"})
	informerObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_informer_objects", Help: "Objects in an informer's cache.",
	}, []string{"kind"})
)

func registerMetrics() {
	metricsOnce.Do(func() {
		prometheus.MustRegister(queueDepth, queueInFlight, queueAdds, queueRetries,
			reconcileDuration, reconcileErrors, informerSynced, informerObjects)
	})
}

func setSynced(kind string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	informerSynced.WithLabelValues(kind).Set(v)
}
