package nodeagent_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/pki/pkitest"
	"github.com/homeostat/homeostat/services/nodeagent"
)

// A log endpoint beyond loopback answers the API's certificate only: not
// another user of the same authority (an admin included, who goes through
// the API and its RBAC), nor a client with no certificate.
func TestLogEndpointAnswersOnlyTheAPI(t *testing.T) {
	p := pkitest.New(t)
	srv := httptest.NewUnstartedServer(nodeagent.OnlyClient(pki.APIClientName,
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("log line\n")) })))
	srv.TLS = p.Server()
	srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	srv.StartTLS()
	t.Cleanup(srv.Close)
	api, err := pki.NewClient(p.CA, pki.Request{CommonName: pki.APIClientName})
	if err != nil {
		t.Fatal(err)
	}
	apiTLS := &tls.Config{RootCAs: p.CA.Pool(), GetClientCertificate: api.GetClientCertificate, MinVersion: tls.VersionTLS12}
	for _, c := range []struct {
		who    string
		client *http.Client
		code   int
	}{
		{"the API", &http.Client{Transport: &http.Transport{TLSClientConfig: apiTLS}}, http.StatusOK},
		{"an admin", p.Admin(), http.StatusForbidden},
		{"a user named like the API in another group", p.Client("system:homeostat-api-x", "system:masters"), http.StatusForbidden},
		{"no certificate", p.Client(""), 0},
	} {
		resp, err := c.client.Get(srv.URL + "/logs/default/p")
		code := 0
		if err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		if code != c.code {
			t.Errorf("%s: got %d (%v), want %d", c.who, code, err, c.code)
		}
	}
}
