package process_test

import (
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/homeostat/homeostat/services/nodeagent/process"
)

// TestMain doubles as a small HTTP server for the probe tests when run with
// HELPER_SERVER=1 (a real process for the runtime to supervise), and as
// the log shim when run with the one argument logshim-helper.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "logshim-helper" {
		if err := process.RunLogShim(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	if os.Getenv("HELPER_SERVER") == "1" {
		helperServer(os.Args[len(os.Args)-1])
		return
	}
	os.Exit(m.Run())
}

func helperServer(port string) {
	var sick atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if sick.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("/sicken", func(http.ResponseWriter, *http.Request) { sick.Store(true) })
	_ = http.ListenAndServe("127.0.0.1:"+port, mux)
	os.Exit(0)
}

func httpPost(url string) (*http.Response, error) {
	resp, err := http.Post(url, "text/plain", nil)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}
