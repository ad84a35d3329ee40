package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/homeostat/homeostat/object"
)

// openAPIv2Protobuf is the media type kubectl asks /openapi/v2 for first.
const openAPIv2Protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

// openAPIv2 serves the swagger 2.0 document, as protobuf when the client
// takes it (kubectl does) and JSON otherwise.
func (s *Service) openAPIv2(w http.ResponseWriter, r *http.Request) {
	d, err := s.openapi.Get()
	if err != nil {
		writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err))
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "protobuf") {
		pb, err := d.V2Protobuf()
		if err != nil {
			writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err))
			return
		}
		serveDocument(w, r, openAPIv2Protobuf, pb, "")
		return
	}
	serveDocument(w, r, "application/json", d.V2, "")
}

// openAPIv3 serves the index of the v3 documents, or one group version's.
func (s *Service) openAPIv3(w http.ResponseWriter, r *http.Request) {
	d, err := s.openapi.Get()
	if err != nil {
		writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err))
		return
	}
	gv := r.PathValue("gv")
	if gv == "" {
		idx, err := d.V3Index()
		if err != nil {
			writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err))
			return
		}
		serveDocument(w, r, "application/json", idx, "")
		return
	}
	doc, ok := d.V3[gv]
	if !ok {
		writeStatus(w, s.log, newError(http.StatusNotFound, object.ReasonNotFound, "no OpenAPI document for %q", gv))
		return
	}
	serveDocument(w, r, "application/json", doc, d.V3Hash[gv])
}

// serveDocument answers with an ETag, so clients may cache; a request
// naming the document's current hash may cache it for good, as Kubernetes
// allows.
func serveDocument(w http.ResponseWriter, r *http.Request, mediaType string, body []byte, hash string) {
	etag := `"` + contentHash(body) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	if hash != "" && r.URL.Query().Get("hash") == hash {
		w.Header().Set("Cache-Control", "public, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	_, _ = w.Write(body)
}

// kubernetesMinor is the Kubernetes release whose API Homeostat answers
// as: kubectl warns when its own minor version is more than one away.
const kubernetesMinor = "34"

// versionInfo is /version, in the shape of k8s.io/apimachinery's
// version.Info.
func versionInfo(w http.ResponseWriter, _ *http.Request) {
	rev, dirty := "", "clean"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "dirty"
			}
		}
	}
	git := "v1." + kubernetesMinor + ".0+homeostat"
	if len(rev) >= 12 {
		git += "." + rev[:12]
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"major": "1", "minor": kubernetesMinor, "gitVersion": git, "gitCommit": rev, "gitTreeState": dirty,
		"goVersion": runtime.Version(), "compiler": runtime.Compiler, "platform": runtime.GOOS + "/" + runtime.GOARCH,
	})
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
