package main_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// restConfig is client-go's configuration from the kubeconfig up wrote,
// reaching the API through proxy when one is given.
func restConfig(t *testing.T, kubeconfig string, proxy *tcpproxy.Proxy) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if proxy != nil {
		u, err := url.Parse(cfg.Host)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = proxy.Addr()
		cfg.Host = u.String()
	}
	return cfg
}

func ptr[T any](v T) *T { return &v }

func clientgoDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Command: []string{"sleep", "3600"}}}}}},
	}
}

// TestClientGoTypedAndDynamic: client-go's typed clientset (which sends
// protobuf for built-in kinds) and its dynamic client work unchanged.
func TestClientGoTypedAndDynamic(t *testing.T) {
	ctx := context.Background()
	s := startUp(t, t.TempDir(), "--no-agent")
	cfg := restConfig(t, s.kubeconfig, nil)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deploys := cs.AppsV1().Deployments("default")
	created, err := deploys.Create(ctx, clientgoDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("typed create: %v", err)
	}
	if created.UID == "" || *created.Spec.Replicas != 2 || created.Spec.RevisionHistoryLimit == nil {
		t.Fatalf("created: %+v", created.Spec)
	}
	if _, err := deploys.Create(ctx, clientgoDeployment("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("a second create: %v, want AlreadyExists", err)
	}
	// An update writes on the resourceVersion it read, and the Deployment
	// controller may write the status in between: a 409, which clients
	// meet as in Kubernetes, by reading again (client-go's RetryOnConflict).
	var updated *appsv1.Deployment
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := deploys.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Replicas = ptr(int32(3))
		updated, err = deploys.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil || *updated.Spec.Replicas != 3 {
		t.Fatalf("typed update: %v", err)
	}
	created.Spec.Replicas = ptr(int32(3))
	if _, err := deploys.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("a stale update: %v, want Conflict", err)
	}
	patched, err := deploys.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"v2"}]}}}}`), metav1.PatchOptions{})
	if err != nil || patched.Spec.Template.Spec.Containers[0].Command[0] != "sleep" || patched.Spec.Template.Spec.Containers[0].Image != "v2" {
		t.Fatalf("typed strategic patch: %v", err)
	}
	sc, err := deploys.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=web" {
		t.Fatalf("get scale: %v %+v", err, sc)
	}
	list, err := deploys.List(ctx, metav1.ListOptions{LabelSelector: "app!=other"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("typed list: %v, %d items", err, len(list.Items))
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Command: []string{"true"}}}}}}}
	if _, err := cs.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("typed job create: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("typed namespace get: %v", err)
	}
	if err := deploys.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("typed delete: %v", err)
	}
	// A clientset speaking protobuf both ways, as Kubernetes' own
	// components are configured to.
	pcfg := rest.CopyConfig(cfg)
	pcfg.ContentType, pcfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"
	pcs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}}
	if got, err := pcs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil || got.Data["mode"] != "fast" || got.UID == "" {
		t.Fatalf("protobuf create: %v %+v", err, got)
	}
	if cms, err := pcs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 1 {
		t.Fatalf("protobuf list: %v %+v", err, cms)
	}

	// The dynamic client on a custom kind.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.must("", "apply", "-f", filepath.Join("..", "..", "examples", "04-widget-kind.yaml"))
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": int64(2)}}}
	var got *unstructured.Unstructured
	poll.Until(t, "the custom kind served", 15*time.Second, func() bool {
		got, err = widgets.Create(ctx, w, metav1.CreateOptions{})
		return err == nil
	})
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 2 {
		t.Fatalf("dynamic create: %v", got.Object)
	}
	if _, err := widgets.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("dynamic patch: %v", err)
	}
	ul, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(ul.Items) != 1 {
		t.Fatalf("dynamic list: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(ul.Items[0].Object, "spec", "size"); size != 5 {
		t.Fatalf("dynamic list after patch: %v", ul.Items[0].Object)
	}
}

// seen records the names an informer's handlers were told of.
type seen struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *seen) add(obj any) {
	if m, err := metaOf(obj); err == nil {
		s.mu.Lock()
		s.names[m] = true
		s.mu.Unlock()
	}
}

func (s *seen) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

func metaOf(obj any) (string, error) {
	if d, ok := obj.(*appsv1.Deployment); ok {
		return d.Name, nil
	}
	return "", apierrors.NewBadRequest("not a deployment")
}

// TestClientGoInformerOutlivesTheAPI: a SharedInformerFactory lists and
// watches (with bookmarks, as client-go asks), resyncs, and when its watch
// is lost to an API restart re-lists and carries on.
func TestClientGoInformerOutlivesTheAPI(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir, "--no-agent")
	proxy, err := tcpproxy.New(strings.TrimPrefix(s.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cs, err := kubernetes.NewForConfig(restConfig(t, s.kubeconfig, proxy))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(cs, time.Second)
	inf := factory.Apps().V1().Deployments().Informer()
	added, updated := &seen{names: map[string]bool{}}, &seen{names: map[string]bool{}}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    added.add,
		UpdateFunc: func(_, obj any) { updated.add(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, clientgoDeployment("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // Shutdown waits for what the context ends
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced")
	}
	poll.Until(t, "the informer to list the first deployment", 15*time.Second, func() bool { return added.has("before") })
	// A resync every second replays the cache as updates.
	poll.Until(t, "a resync", 15*time.Second, func() bool { return updated.has("before") })
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, clientgoDeployment("watched"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the watch to deliver a new deployment", 15*time.Second, func() bool { return added.has("watched") })

	// The API goes away and comes back at another address behind the
	// same proxy; the informer's watch breaks and it must recover.
	s.stop()
	s2 := startUp(t, dir, "--no-agent")
	proxy.Retarget(strings.TrimPrefix(s2.url, "https://"))
	c2, err := kubernetes.NewForConfig(restConfig(t, s2.kubeconfig, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.AppsV1().Deployments("default").Create(ctx, clientgoDeployment("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the informer to carry on after the restart", 60*time.Second, func() bool { return added.has("after") })
	lister := factory.Apps().V1().Deployments().Lister()
	poll.Until(t, "the informer's cache to hold all three", 15*time.Second, func() bool {
		l, err := lister.List(labelsEverything())
		return err == nil && len(l) == 3
	})
}

func labelsEverything() labels.Selector { return labels.Everything() }

// TestClientGoLeaderElection: client-go's leader election, as operators
// run it, holds a coordination.k8s.io/v1 Lease: one candidate leads, and
// when it steps down the other takes over.
func TestClientGoLeaderElection(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	cs, err := kubernetes.NewForConfig(restConfig(t, s.kubeconfig, nil))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	leading := map[string]bool{}
	run := func(ctx context.Context, id string) chan struct{} {
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: "operator", Namespace: "default"},
			Client: cs.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
				ReleaseOnCancel: true,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { mu.Lock(); leading[id] = true; mu.Unlock() },
					OnStoppedLeading: func() { mu.Lock(); leading[id] = false; mu.Unlock() },
				},
			})
		}()
		return done
	}
	leads := func(id string) bool { mu.Lock(); defer mu.Unlock(); return leading[id] }
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := run(ctxA, "a")
	poll.Until(t, "a to lead", 30*time.Second, func() bool { return leads("a") })
	ctxB, stopB := context.WithCancel(context.Background())
	doneB := run(ctxB, "b")
	defer func() { stopB(); <-doneB }()
	stopA()
	<-doneA
	poll.Until(t, "b to take over once a steps down", 30*time.Second, func() bool { return leads("b") })
	l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "operator", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "b" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions < 1 {
		t.Fatalf("the lease: %v %+v", err, l)
	}
}

// TestClientGoEventsRecorder: client-go's events.k8s.io/v1 recorder, as
// newer operators use, records an Event that reads back as a core/v1 one.
func TestClientGoEventsRecorder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startUp(t, t.TempDir(), "--no-agent")
	cs, err := kubernetes.NewForConfig(restConfig(t, s.kubeconfig, nil))
	if err != nil {
		t.Fatal(err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "4d3c2b1a"}}
	b.NewRecorder(clientgoscheme.Scheme, "example.com/operator").Eventf(pod, nil, corev1.EventTypeNormal, "Reconciled", "Reconcile", "reconciled %s", "web-1")
	poll.Until(t, "the recorded event, read as core/v1", 30*time.Second, func() bool {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-1"})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		e := list.Items[0]
		return e.Reason == "Reconciled" && e.Message == "reconciled web-1" && e.ReportingController == "example.com/operator" && e.Action == "Reconcile"
	})
	v1, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web-1"})
	if err != nil || len(v1.Items) != 1 || v1.Items[0].Note != "reconciled web-1" || v1.Items[0].EventTime.IsZero() {
		t.Fatalf("events.k8s.io/v1 list: %v %+v", err, v1)
	}
	// The core/v1 recorder most operators use (controller-runtime's) too;
	// its events are named <object>.<suffix> as well.
	cb := record.NewBroadcaster(record.WithContext(ctx))
	defer cb.Shutdown()
	cb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	cb.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "legacy-operator"}).Event(pod, corev1.EventTypeWarning, "Drifted", "spec drifted")
	poll.Until(t, "the core recorder's event", 30*time.Second, func() bool {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=Drifted"})
		return err == nil && len(list.Items) == 1 && list.Items[0].Source.Component == "legacy-operator" && list.Items[0].Count == 1
	})
}
