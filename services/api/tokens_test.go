package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// bearerGet sends GET path with a bearer token and no client certificate.
func bearerGet(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
	return bearerDo(t, http.MethodGet, base+path, token, "")
}

func bearerDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	r := callAs(t, clientWith(t, nil), token, method, url, "application/json", body)
	return r.code, string(r.body)
}

// issue asks for a token of a ServiceAccount and returns the TokenRequest answered.
func issue(t *testing.T, base, ns, sa, body string) (int, map[string]any) {
	t.Helper()
	r := call(t, "POST", base+"/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa+"/token", "application/json", body)
	var out map[string]any
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("token answer is not JSON: %s", r.body)
	}
	return r.code, out
}

func tokenOf(t *testing.T, tr map[string]any) string {
	t.Helper()
	st, _ := tr["status"].(map[string]any)
	tok, _ := st["token"].(string)
	if tok == "" {
		t.Fatalf("the TokenRequest holds no token: %v", tr)
	}
	return tok
}

// A ServiceAccount's token names it; the store keeps only the token's hash;
// a wrong, malformed, expired or revoked token, or one of a deleted
// account, gets 401 saying which.
func TestServiceAccountTokens(t *testing.T) {
	c := conn(t)
	// This API sweeps nothing while the test looks at an expired token; a
	// second one, started for it, sweeps it away.
	base := startAPI(t, c, func(cfg *api.Config) { cfg.CompactEvery = time.Hour })
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts", "application/json",
		`{"metadata":{"name":"ci"}}`), 201, "")

	code, tr := issue(t, base, "default", "ci", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":7200}}`)
	if code != 201 {
		t.Fatalf("token request: %d %v", code, tr)
	}
	tok := tokenOf(t, tr)
	exp, _ := time.Parse(time.RFC3339, tr["status"].(map[string]any)["expirationTimestamp"].(string))
	if d := time.Until(exp); d < 119*time.Minute || d > 121*time.Minute {
		t.Fatalf("token expires in %v, want 2h", d)
	}

	code, body := bearerDo(t, "POST", base+"/apis/authentication.k8s.io/v1/selfsubjectreviews", tok, `{}`)
	if code != 201 || !strings.Contains(body, `"username":"system:serviceaccount:default:ci"`) ||
		!strings.Contains(body, `"system:serviceaccounts:default"`) {
		t.Fatalf("whoami with the token: %d %s", code, body)
	}
	if code, body := bearerGet(t, base, "/apis", tok); code != 200 {
		t.Fatalf("GET /apis with the token: %d %s", code, body)
	}

	// The store holds the hash of the secret, never the secret.
	ns, name, secret := splitTok(t, tok)
	stored := call(t, "GET", base+"/apis/homeostat.io/v1/namespaces/"+ns+"/tokens/"+name, "", "")
	mustCode(t, stored, 200, "")
	sum := sha256.Sum256([]byte(secret))
	if strings.Contains(string(stored.body), secret) || !strings.Contains(string(stored.body), hex.EncodeToString(sum[:])) {
		t.Fatalf("the stored token is not the secret's hash: %s", stored.body)
	}

	for _, tc := range []struct{ name, token, why string }{
		{"wrong secret", "hst_" + ns + "_" + name + "_" + strings.Repeat("A", len(secret)), "does not match"},
		{"malformed", "not-a-token", "not a token of this cluster"},
		{"unknown", "hst_default_nobody_" + secret, "revoked or never existed"},
	} {
		if code, body := bearerGet(t, base, "/api/v1/namespaces/default/pods", tc.token); code != 401 || !strings.Contains(body, tc.why) {
			t.Fatalf("%s: %d %s, want 401 saying %q", tc.name, code, body, tc.why)
		}
	}

	// Expired: a Token written straight to the store, past its expiry,
	// which the API also sweeps away.
	sa := call(t, "GET", base+"/api/v1/namespaces/default/serviceaccounts/ci", "", "")
	old := storeToken(t, c, "ci-old", sa.obj.Metadata.UID, "oldsecret", time.Now().Add(-time.Minute))
	if code, body := bearerGet(t, base, "/api/v1/namespaces/default/pods", "hst_default_ci-old_oldsecret"); code != 401 || !strings.Contains(body, "expired at") {
		t.Fatalf("expired token: %d %s", code, body)
	}
	startAPI(t, c, func(cfg *api.Config) { cfg.CompactEvery = 200 * time.Millisecond })
	poll.Until(t, "the expired token swept", 15*time.Second, func() bool {
		_, err := old.Get(context.Background(), "default.ci-old")
		return err != nil
	})

	// Revoked: deleting the Token.
	mustCode(t, call(t, "DELETE", base+"/apis/homeostat.io/v1/namespaces/"+ns+"/tokens/"+name, "", ""), 200, "")
	poll.Until(t, "the revoked token refused", 15*time.Second, func() bool {
		code, body := bearerGet(t, base, "/api/v1/namespaces/default/pods", tok)
		return code == 401 && strings.Contains(body, "revoked")
	})

	// Deleting the ServiceAccount revokes every token it has.
	_, tr = issue(t, base, "default", "ci", "")
	tok2 := tokenOf(t, tr)
	if code, body := bearerGet(t, base, "/apis", tok2); code != 200 {
		t.Fatalf("second token: %d %s", code, body)
	}
	mustCode(t, call(t, "DELETE", base+"/api/v1/namespaces/default/serviceaccounts/ci", "", ""), 200, "")
	poll.Until(t, "a token of a deleted account refused", 15*time.Second, func() bool {
		code, body := bearerGet(t, base, "/api/v1/namespaces/default/pods", tok2)
		return code == 401 && strings.Contains(body, "no longer exists")
	})
	// A new account of the same name does not bring its tokens back.
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts", "application/json",
		`{"metadata":{"name":"ci"}}`), 201, "")
	if code, body := bearerGet(t, base, "/api/v1/namespaces/default/pods", tok2); code != 401 {
		t.Fatalf("a token of the old account works for the new one: %d %s", code, body)
	}
}

// Bad token requests are refused with the field and the rule; Tokens are
// made only by the subresource.
func TestTokenRequestsRefused(t *testing.T) {
	base := startAPI(t, conn(t))
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts", "application/json",
		`{"metadata":{"name":"ci"}}`), 201, "")
	short, bound := int64(60), int64(3600)
	for _, tc := range []struct {
		name, sa, body string
		code           int
		why            string
		contentType    string
	}{
		{"too short", "ci", `{"spec":{"expirationSeconds":60}}`, 422, "spec.expirationSeconds", ""},
		{"too long", "ci", `{"spec":{"expirationSeconds":5000000000}}`, 422, "spec.expirationSeconds", ""},
		{"bound", "ci", `{"spec":{"boundObjectRef":{"kind":"Pod","name":"x"}}}`, 422, "spec.boundObjectRef", ""},
		{"wrong kind", "ci", `{"apiVersion":"v1","kind":"Pod"}`, 400, "TokenRequest", ""},
		{"no account", "nobody", `{}`, 404, "nobody", ""},
		// What kubectl's typed client sends.
		{"too short in protobuf", "ci", protoTokenRequest(t, authv1.TokenRequestSpec{ExpirationSeconds: &short}), 422,
			"spec.expirationSeconds", "application/vnd.kubernetes.protobuf"},
		{"bound in protobuf", "ci", protoTokenRequest(t, authv1.TokenRequestSpec{ExpirationSeconds: &bound,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", Name: "x"}}), 422, "spec.boundObjectRef", "application/vnd.kubernetes.protobuf"},
		{"garbled protobuf", "ci", "k8s\x00garbage", 400, "TokenRequest", "application/vnd.kubernetes.protobuf"},
		{"xml", "ci", "<TokenRequest/>", 415, "application/xml", "application/xml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.contentType
			if ct == "" {
				ct = "application/json"
			}
			r := call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts/"+tc.sa+"/token", ct, tc.body)
			if r.code != tc.code || !strings.Contains(r.status.Message, tc.why) {
				t.Fatalf("got %d %s, want %d naming %q", r.code, r.body, tc.code, tc.why)
			}
		})
	}
	r := call(t, "POST", base+"/apis/homeostat.io/v1/namespaces/default/tokens", "application/json",
		`{"metadata":{"name":"mine"},"spec":{"serviceAccountName":"ci","serviceAccountUID":"x","sha256":"`+strings.Repeat("0", 64)+`","expirationTimestamp":"2099-01-01T00:00:00Z"}}`)
	mustCode(t, r, 405, object.ReasonMethodNotAllowed)
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/pods/x/token", "application/json", `{}`), 404, "")
}

func splitTok(t *testing.T, tok string) (ns, name, secret string) {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(tok, "hst_"), "_", 3)
	if !strings.HasPrefix(tok, "hst_") || len(parts) != 3 {
		t.Fatalf("token %q is not hst_<namespace>_<name>_<secret>", tok)
	}
	return parts[0], parts[1], parts[2]
}

// storeToken writes a Token straight to the store, as only a test may.
func storeToken(t *testing.T, c *bus.Conn, name, saUID, secret string, expires time.Time) *bus.Store {
	t.Helper()
	st, err := c.Store(context.Background(), bus.StoreSpec{Resource: "tokens.homeostat.io", Kind: "Token", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(secret))
	o := &object.Object{APIVersion: "homeostat.io/v1", Kind: "Token", Metadata: object.Meta{Name: name, Namespace: "default"}}
	if err := o.SetSpec(map[string]any{"serviceAccountName": "ci", "serviceAccountUID": saUID,
		"sha256": hex.EncodeToString(sum[:]), "expirationTimestamp": expires.UTC().Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return st
}

// protoTokenRequest is a TokenRequest in Kubernetes' protobuf encoding.
func protoTokenRequest(t *testing.T, spec authv1.TokenRequestSpec) string {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := authv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tr := &authv1.TokenRequest{Spec: spec}
	tr.SetGroupVersionKind(authv1.SchemeGroupVersion.WithKind("TokenRequest"))
	var b strings.Builder
	if err := protobuf.NewSerializer(scheme, scheme).Encode(tr, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
