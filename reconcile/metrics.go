package reconcile

import "github.com/prometheus/client_golang/prometheus"

// The runtime's metrics, registered on the default registry and labelled
// by controller (or kind, for informers).
var (
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
	cacheBehind = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_reconcile_cache_behind_total",
		Help: "Deliveries handed back because a cache had not reached the revision that triggered them.",
	}, []string{"controller"})
	claimWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "homeostat_reconcile_claim_waits_total",
		Help: "Deliveries handed back because the key's claim was held by another process or could not be taken (Exclusive controllers).",
	}, []string{"controller"})
	informerSynced = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_informer_synced", Help: "1 once an informer has loaded its initial list.",
	}, []string{"kind"})
	informerObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_informer_objects", Help: "Objects in an informer's cache.",
	}, []string{"kind"})
	corruptObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "homeostat_corrupt_objects",
		Help: "1 for each stored key whose value is not a valid object; informers and controllers leave it out until it is fixed or deleted.",
	}, []string{"resource", "key"})
	historyDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "homeostat_reconcile_history_dropped_total",
		Help: "Reconcile history entries not recorded: the store did not take them, or too many waited for it.",
	})
)

func init() {
	prometheus.MustRegister(queueDepth, queueInFlight, queueAdds, queueRetries,
		reconcileDuration, reconcileErrors, cacheBehind, claimWaits, informerSynced, informerObjects, corruptObjects, historyDropped)
}

func setSynced(kind string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	informerSynced.WithLabelValues(kind).Set(v)
}
