package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/audit"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

func auditList(t *testing.T, base string, query url.Values) []audit.Event {
	t.Helper()
	r := call(t, "GET", base+"/apis/homeostat.io/v1/auditevents?"+query.Encode(), "", "")
	mustCode(t, r, 200, "")
	var list audit.EventList
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Every write, by whoever made it, and every refused request is in the
// audit log with who made it; reads are not, unless the level says so.
func TestAuditRecordsEveryWrite(t *testing.T) {
	recordSpans(t) // so that each write has a trace to name
	base := startAPI(t, conn(t))
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces", "application/json", `{"metadata":{"name":"team"}}`), 201, "")
	mustCode(t, call(t, "POST", base+rbacAPI+"namespaces/team/rolebindings", "application/json", bindingJSON("alice-edit", "ClusterRole", "edit", "alice")), 201, "")
	alice, bob := certIdentity(t, "alice", "dev"), certIdentity(t, "bob")
	poll.Until(t, "alice's binding in effect", 20*time.Second, func() bool {
		return alice.do(t, "GET", base+core+"team/pods", "") == 200
	})
	const n = 60
	want := map[string]string{} // pod name -> who made it
	for i := range n {
		name := fmt.Sprintf("p-%02d", i)
		body := `{"metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}`
		who := []string{"admin", "alice"}[i%2]
		var code int
		if who == "admin" {
			code = call(t, "POST", base+core+"team/pods", "application/json", body).code
		} else {
			code = alice.do(t, "POST", base+core+"team/pods", body)
		}
		if code != 201 {
			t.Fatalf("create %s as %s: %d", name, who, code)
		}
		want[name] = who
	}
	// A generated name is recorded too, and so is an impersonated write.
	gen := call(t, "POST", base+core+"team/pods", "application/json", `{"metadata":{"generateName":"g-"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}`)
	mustCode(t, gen, 201, "")
	if c := admin(t); c != nil {
		req, _ := http.NewRequest("DELETE", base+core+"team/pods/p-00", nil)
		req.Header.Set("Impersonate-User", "alice")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("delete as alice: %d", resp.StatusCode)
		}
	}
	if c := bob.do(t, "POST", base+core+"team/pods", `{"metadata":{"name":"x"}}`); c != 403 {
		t.Fatalf("bob's create: %d, want 403", c)
	}
	anonymous := identity{name: "anonymous", hc: clientWith(t, nil)}
	if c := anonymous.do(t, "DELETE", base+core+"team/pods/p-01", ""); c != 401 {
		t.Fatalf("anonymous delete: %d, want 401", c)
	}
	if c := alice.do(t, "GET", base+core+"team/pods/p-02", ""); c != 200 {
		t.Fatalf("alice's read: %d", c)
	}

	// Refusals are recorded without the client waiting for the store:
	// poll until the log holds everything, then report what it does not.
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	check := func() bool {
		problems = problems[:0]
		events := auditList(t, base, url.Values{"limit": {"1000"}})
		created := map[string]audit.Event{}
		var deleted, refused, unauthenticated, reads int
		for _, e := range events {
			if e.ObjectRef == nil || e.ObjectRef.Resource != "pods" {
				continue
			}
			switch {
			case e.Verb == "create" && e.ResponseStatus.Code == 201:
				created[e.ObjectRef.Name] = e
			case e.Verb == "delete" && e.ResponseStatus.Code == 200:
				deleted++
				if e.User.Username != "admin" || e.ImpersonatedUser == nil || e.ImpersonatedUser.Username != "alice" || e.ObjectRef.Name != "p-00" {
					errorf("impersonated delete recorded as %+v", e)
				}
			case e.ResponseStatus.Code == 403 && e.User.Username == "alice" && e.Verb == "list":
				// Refused while the test waited for alice's binding to
				// take effect: recorded, as every refusal is, whether
				// the wait saw one or not.
				if e.Annotations[audit.AnnotationDecision] != "forbid" {
					errorf("refusal of alice's wait recorded as %+v", e)
				}
			case e.ResponseStatus.Code == 403:
				refused++
				if e.User.Username != "bob" || e.Annotations[audit.AnnotationDecision] != "forbid" {
					errorf("refusal recorded as %+v", e)
				}
			case e.ResponseStatus.Code == 401:
				unauthenticated++
				if e.User.Username != api.UserAnonymous || e.Verb != "delete" {
					errorf("unauthenticated request recorded as %+v", e)
				}
			case e.Verb == "get" || e.Verb == "list":
				reads++
			}
		}
		for name, who := range want {
			e, ok := created[name]
			switch {
			case !ok:
				errorf("create of %s missing from the audit log", name)
			case e.User.Username != who:
				errorf("create of %s recorded as %q's, want %q's", name, e.User.Username, who)
			case e.ObjectRef.Namespace != "team" || e.Annotations[audit.AnnotationTraceID] == "" || e.AuditID == "" || e.RequestReceivedTimestamp.IsZero():
				errorf("create of %s recorded without namespace, trace, id or time: %+v", name, e)
			}
		}
		if e, ok := created[gen.obj.Metadata.Name]; !ok || e.User.Username != "admin" {
			errorf("create of the generated %q: %+v, %v", gen.obj.Metadata.Name, e, ok)
		}
		if len(created) != n+1 || deleted != 1 || refused != 1 || unauthenticated != 1 || reads != 0 {
			errorf("recorded %d creates, %d deletes, %d refusals, %d unauthenticated, %d reads; want %d, 1, 1, 1, 0", len(created), deleted, refused, unauthenticated, reads, n+1)
		}
		return len(problems) == 0
	}
	if !poll.Within(20*time.Second, check) {
		t.Fatalf("the audit log:\n%s", strings.Join(problems, "\n"))
	}

	// The filters.
	for _, c := range []struct {
		q    url.Values
		want int
	}{
		{url.Values{"user": {"bob"}}, 1},
		{url.Values{"user": {"alice"}, "verb": {"create"}}, n / 2},
		{url.Values{"user": {"alice"}, "verb": {"delete"}}, 1}, // the impersonated one
		{url.Values{"verb": {"create"}, "limit": {"5"}}, 5},
		{url.Values{"since": {time.Now().Add(time.Hour).Format(time.RFC3339)}}, 0},
	} {
		if got := auditList(t, base, c.q); len(got) != c.want {
			t.Errorf("audit %v: %d records, want %d", c.q, len(got), c.want)
		}
	}
	if r := call(t, "GET", base+"/apis/homeostat.io/v1/auditevents?since=yesterday", "", ""); r.code != 400 {
		t.Errorf("since=yesterday: %d, want 400", r.code)
	}
	if c := alice.do(t, "GET", base+"/apis/homeostat.io/v1/auditevents", ""); c != 403 {
		t.Errorf("alice reads the audit log: %d, want 403", c)
	}
}

// At level All reads are recorded too; at None nothing is, and the log
// cannot be read.
func TestAuditLevels(t *testing.T) {
	c := conn(t)
	all := startAPI(t, c, func(cfg *api.Config) { cfg.Audit.Level = audit.LevelAll })
	mustCode(t, call(t, "GET", all+"/api/v1/namespaces/default", "", ""), 200, "")
	var reads int
	for _, e := range auditList(t, all, url.Values{"verb": {"get"}}) {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "namespaces" && e.ObjectRef.Name == "default" {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("level All recorded %d reads of the namespace, want 1", reads)
	}
	none := startAPI(t, conn(t), func(cfg *api.Config) { cfg.Audit.Level = audit.LevelNone })
	mustCode(t, call(t, "GET", none+"/apis/homeostat.io/v1/auditevents", "", ""), 503, "ServiceUnavailable")
}
