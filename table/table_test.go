package table_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/table"
)

func decode(t *testing.T, s string) *object.Object {
	t.Helper()
	o, err := object.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// cells renders one object and returns its cells by column name.
func cells(t *testing.T, o *object.Object) map[string]any {
	t.Helper()
	tb, err := table.New(table.Columns(o.Kind), []*object.Object{o}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for i, c := range tb.ColumnDefinitions {
		out[c.Name] = tb.Rows[0].Cells[i]
	}
	return out
}

func TestCells(t *testing.T) {
	deleting := time.Now().Format(time.RFC3339)
	cases := []struct {
		name, obj, column string
		want              any
	}{
		{"pod pending", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]}}`, "Status", "Pending"},
		{"pod running", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"},{"name":"b"}]},
			"status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":2},{"ready":false,"restartCount":1}]}}`, "Ready", "1/2"},
		{"pod restarts", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Running","containerStatuses":[{"restartCount":2},{"restartCount":1}]}}`, "Restarts", "3"},
		{"pod crash looping", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Running","containerStatuses":[{"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`, "Status", "CrashLoopBackOff"},
		{"pod terminating", `{"kind":"Pod","metadata":{"name":"p","deletionTimestamp":"` + deleting + `"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Running"}}`, "Status", "Terminating"},
		{"pod completed", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Succeeded","containerStatuses":[{"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}`, "Status", "Completed"},
		{"pod failed", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":3,"reason":"Error"}}}]}}`, "Status", "Error"},
		{"pod killed by a signal", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":137,"signal":9}}}]}}`, "Status", "Signal:9"},
		{"one container completed, one running", `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a"},{"name":"b"}]},
			"status":{"phase":"Running","containerStatuses":[{"state":{"terminated":{"exitCode":0,"reason":"Completed"}}},{"ready":true,"state":{"running":{}}}]}}`, "Status", "Running"},
		{"finished pod being deleted", `{"kind":"Pod","metadata":{"name":"p","deletionTimestamp":"` + deleting + `"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Succeeded","containerStatuses":[{"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}`, "Status", "Completed"},
		{"deployment ready", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3},"status":{"readyReplicas":2}}`, "Ready", "2/3"},
		{"deployment images", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}}}`, "Images", "x,y"},
		{"replicaset desired", `{"kind":"ReplicaSet","metadata":{"name":"r"},"spec":{"replicas":4}}`, "Desired", int64(4)},
		{"job complete", `{"kind":"Job","metadata":{"name":"j"},"spec":{"completions":2},"status":{"succeeded":2,"conditions":[{"type":"Complete","status":"True"}]}}`, "Status", "Complete"},
		{"job completions default to one", `{"kind":"Job","metadata":{"name":"j"},"spec":{}}`, "Completions", "0/1"},
		{"service ports", `{"kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30080,"protocol":"TCP"},{"port":53,"protocol":"UDP"}]}}`, "Port(s)", "80:30080/TCP,53/UDP"},
		{"service without ports", `{"kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None"}}`, "Port(s)", "<none>"},
		{"headless service", `{"kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None"}}`, "Cluster-IP", "None"},
		{"external name", `{"kind":"Service","metadata":{"name":"s"},"spec":{"type":"ExternalName","externalName":"db.example.com"}}`, "External-IP", "db.example.com"},
		{"load balancer pending", `{"kind":"Service","metadata":{"name":"s"},"spec":{"type":"LoadBalancer"}}`, "External-IP", "<pending>"},
		{"service selector", `{"kind":"Service","metadata":{"name":"s"},"spec":{"selector":{"app":"web"}}}`, "Selector", "app=web"},
		{"node ready", `{"kind":"Node","metadata":{"name":"n"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, "Status", "Ready"},
		{"node cordoned and not ready", `{"kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":true},
			"status":{"conditions":[{"type":"Ready","status":"False"}]}}`, "Status", "NotReady,SchedulingDisabled"},
		{"namespace terminating", `{"kind":"Namespace","metadata":{"name":"n","deletionTimestamp":"` + deleting + `"},"status":{"phase":"Active"}}`, "Status", "Terminating"},
		{"event at the top level", `{"kind":"Event","metadata":{"name":"e"},"reason":"Started","involvedObject":{"kind":"Pod","name":"p"}}`, "Object", "pod/p"},
		{"event stored under spec", `{"kind":"Event","metadata":{"name":"e"},"spec":{"reason":"Started"}}`, "Reason", "Started"},
		{"rolebinding subjects", `{"kind":"RoleBinding","metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"r"},
			"subjects":[{"kind":"User","name":"alice"},{"kind":"ServiceAccount","name":"bot","namespace":"ns"}]}`, "ServiceAccounts", "ns/bot"},
		{"a kind without a printer", `{"kind":"Widget","metadata":{"name":"w"}}`, "Name", "w"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cells(t, decode(t, tc.obj))
			if got[tc.column] != tc.want {
				t.Errorf("%s = %#v, want %#v (all: %v)", tc.column, got[tc.column], tc.want, got)
			}
		})
	}
}

func TestRowsCarryWhatIsAsked(t *testing.T) {
	o := decode(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}`)
	for include, want := range map[string]string{
		"":                    `"kind":"PartialObjectMetadata"`,
		table.IncludeMetadata: `"kind":"PartialObjectMetadata"`,
		table.IncludeObject:   `"spec":{"containers"`,
		table.IncludeNone:     `null`,
	} {
		tb, err := table.New(table.Columns("Pod"), []*object.Object{o}, table.Options{Include: include, ResourceVersion: "7"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tb.Rows[0].Object)
		if !strings.Contains(string(b), want) {
			t.Errorf("includeObject=%q: row object %s, want %s", include, b, want)
		}
		if tb.Kind != "Table" || tb.APIVersion != "meta.k8s.io/v1" || tb.ResourceVersion != "7" {
			t.Errorf("table header: %+v", tb.TypeMeta)
		}
	}
	if table.CheckInclude("Everything") == nil {
		t.Error("includeObject=Everything accepted")
	}
}
