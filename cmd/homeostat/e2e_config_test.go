package main_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// The pod proves it has the secret by printing its digest, never the value.
const configReader = `apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: main
    command:
    - sh
    - -c
    - |
      printf 'pw %s\n' "$(printf %s "$PW" | sha256sum | cut -c1-64)"
      echo "greeting=$GREETING level=$APP_level node=$NODE"
      while true; do echo "file=$(cat $HOMEOSTAT_ROOT/etc/app/greeting)"; sleep 0.2; done
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: CONFIG, key: greeting}}
    - name: PW
      valueFrom: {secretKeyRef: {name: db, key: password}}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    envFrom:
    - configMapRef: {name: CONFIG}
      prefix: APP_
    volumeMounts:
    - {name: cfg, mountPath: /etc/app}
    - {name: sec, mountPath: /etc/db, readOnly: true}
  volumes:
  - {name: cfg, configMap: {name: CONFIG}}
  - {name: sec, secret: {secretName: db, defaultMode: 0400}}
`

func configPod(name, config string) string {
	return strings.NewReplacer("NAME", name, "CONFIG", config).Replace(configReader)
}

// TestConfigMapsAndSecretsReachPods: with kubectl's generators, a
// ConfigMap and a Secret reach a process pod as variables (valueFrom,
// envFrom, fieldRef) and as files; a change of the ConfigMap reaches the
// running pod's files; a pod that refers to a ConfigMap not yet made waits
// with CreateContainerConfigError naming it, and starts once it is made;
// an immutable ConfigMap refuses changes; and the secret's value appears
// in no log, event, audit record or trace of the control plane.
func TestConfigMapsAndSecretsReachPods(t *testing.T) {
	const secret = "hunter2-e2e-s3cret"
	dir := t.TempDir()
	s := startUp(t, dir, "--config-sync", "300ms")
	k := newKubectl(t, s)
	k.must("configmap/app created", "", "create", "configmap", "app", "--from-literal=greeting=hello", "--from-literal=level=debug")
	k.must("secret/db created", "", "create", "secret", "generic", "db", "--from-literal=password="+secret)
	k.must("pod/reader created", configPod("reader", "app"), "apply", "-f", "-")
	k.must("pod/waiter created", configPod("waiter", "later"), "apply", "-f", "-")
	k.must("condition met", "", "wait", "--for=condition=Ready", "pod/reader", "--timeout=60s")

	digest := sha256.Sum256([]byte(secret))
	logs := func(pod string) string { out, _ := k.run("", "logs", pod); return out }
	poll.Until(t, "the reader's variables and file", 30*time.Second, func() bool {
		out := logs("reader")
		return strings.Contains(out, "pw "+hex.EncodeToString(digest[:])) &&
			strings.Contains(out, "greeting=hello level=debug node="+nodeName(dir)) && strings.Contains(out, "file=hello")
	})
	k.must("configmap/app patched", "", "patch", "configmap", "app", "-p", `{"data":{"greeting":"bonjour"}}`)
	poll.Until(t, "the changed ConfigMap in the running pod's file", 30*time.Second, func() bool {
		return strings.Contains(logs("reader"), "file=bonjour")
	})

	waiting := func() string {
		out, _ := k.run("", "get", "pod", "waiter", "-o",
			"jsonpath={.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}")
		return out
	}
	poll.Until(t, "the waiter held for its missing ConfigMap", 30*time.Second, func() bool {
		return waiting() == `CreateContainerConfigError: configmap "later" not found`
	})
	k.must("CreateContainerConfigError", "", "get", "pod", "waiter")
	k.must("configmap/later created", "", "create", "configmap", "later", "--from-literal=greeting=finally")
	k.must("condition met", "", "wait", "--for=condition=Ready", "pod/waiter", "--timeout=60s")
	poll.Until(t, "the waiter's file", 30*time.Second, func() bool { return strings.Contains(logs("waiter"), "file=finally") })

	// A pod whose only volume is an emptyDir refers to nothing, and has it.
	k.must("pod/scratch created", `apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  containers:
  - name: c
    command: [sh, -c, 'echo kept > $HOMEOSTAT_ROOT/tmp/work/x && cat $HOMEOSTAT_ROOT/tmp/work/x && sleep 3600']
    volumeMounts: [{name: work, mountPath: /tmp/work}]
  volumes: [{name: work, emptyDir: {}}]
`, "apply", "-f", "-")
	poll.Until(t, "the emptyDir written and read", 30*time.Second, func() bool { return strings.Contains(logs("scratch"), "kept") })

	k.must("configmap/later patched", "", "patch", "configmap", "later", "-p", `{"immutable":true}`)
	out, err := k.run("", "patch", "configmap", "later", "-p", `{"data":{"greeting":"again"}}`)
	if err == nil || !strings.Contains(out, "data: field is immutable") {
		t.Fatalf("changing an immutable ConfigMap: %v\n%s", err, out)
	}
	k.must("NAME   TYPE     DATA   AGE", "", "get", "secrets")

	secretNowhere(t, s, k, secret)
}

// secretNowhere fails if the secret's value, plain or base64, is in up's
// output, the events, the audit log, or the traces of the Secret and of
// the pods that read it.
func secretNowhere(t *testing.T, s *server, k *kubectlRunner, secret string) {
	t.Helper()
	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))}
	places := map[string]string{
		"up's logs": s.out.String(),
		"events":    k.must("", "", "get", "events", "-A", "-o", "json"),
		"audit":     s.must("", "audit", "-o", "json"),
	}
	for _, obj := range []string{"secrets/db", "pods/reader", "pods/waiter"} {
		places["the trace of "+obj] = recordedTrace(t, s, obj)
	}
	for where, text := range places {
		if len(text) == 0 {
			t.Fatalf("%s is empty: nothing was checked", where)
		}
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("the secret's value is in %s", where)
			}
		}
	}
}

// recordedTrace is the recorded trace of a default-namespace object's
// latest write. Spans are written in batches each second, so a write's
// trace may not be there yet: it waits for it, reading which write is
// the latest again each time.
func recordedTrace(t *testing.T, s *server, obj string) string {
	t.Helper()
	var text string
	poll.Until(t, "the trace of "+obj+"'s latest write", 30*time.Second, func() bool {
		body, code := s.tryGet(t, "/apis/homeostat.io/v1/traces/"+traceOf(t, s, obj))
		text = body
		return code == http.StatusOK
	})
	return text
}

// get reads path as up's admin, failing unless it answers 200.
func (s *server) get(t *testing.T, path string) string {
	t.Helper()
	body, code := s.tryGet(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	return body
}

// tryGet reads path as up's admin: the answer's body and code.
func (s *server) tryGet(t *testing.T, path string) (string, int) {
	t.Helper()
	resp, err := s.http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the answer: %v", path, err)
	}
	return string(body), resp.StatusCode
}

// traceOf is the trace of a default-namespace object's latest write.
func traceOf(t *testing.T, s *server, obj string) string {
	t.Helper()
	var st struct {
		TraceID string `json:"traceID"`
	}
	if err := json.Unmarshal([]byte(s.get(t, "/api/v1/namespaces/default/"+obj+"/reconcile")), &st); err != nil || st.TraceID == "" {
		t.Fatalf("%s carries no trace: %v", obj, err)
	}
	return st.TraceID
}
