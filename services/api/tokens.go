package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

// A ServiceAccount's bearer token reads hst_<namespace>_<token name>_<secret>:
// the name finds its Token object, which holds the SHA-256 of the secret,
// never the secret itself. Names and namespaces hold no underscore, so the
// token splits without ambiguity.
const TokenPrefix = "hst_"

// Token lifetimes, as Kubernetes bounds a TokenRequest's.
const (
	defaultTokenTTL = time.Hour
	minTokenTTL     = 10 * time.Minute
	maxTokenTTL     = 1 << 32 * time.Second
)

// LabelServiceAccount names a Token's ServiceAccount, to list its tokens.
const LabelServiceAccount = "homeostat.io/service-account"

// tokenSpec is the spec of a Token (homeostat.io/v1).
type tokenSpec struct {
	ServiceAccountName  string    `json:"serviceAccountName"`
	ServiceAccountUID   string    `json:"serviceAccountUID"`
	SHA256              string    `json:"sha256"`
	ExpirationTimestamp time.Time `json:"expirationTimestamp"`
	Audiences           []string  `json:"audiences,omitempty"`
}

// tokenRequest is authentication.k8s.io/v1 TokenRequest, what
// `kubectl create token` sends and reads back.
type tokenRequest struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   object.Meta `json:"metadata"`
	Spec       struct {
		Audiences         []string        `json:"audiences"`
		ExpirationSeconds *int64          `json:"expirationSeconds,omitempty"`
		BoundObjectRef    json.RawMessage `json:"boundObjectRef,omitempty"`
	} `json:"spec"`
	Status struct {
		Token               string    `json:"token"`
		ExpirationTimestamp time.Time `json:"expirationTimestamp"`
	} `json:"status"`
}

// issueToken serves POST …/serviceaccounts/NAME/token: it stores a new
// Token for the ServiceAccount and answers the secret once.
func (s *Service) issueToken(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	dry, e := dryRun(r)
	if e != nil {
		return e
	}
	req, e := s.readTokenRequest(r)
	if e != nil {
		return e
	}
	ttl, e := tokenTTL(ref, req)
	if e != nil {
		return e
	}
	sa, err := ref.store.Get(r.Context(), ref.key())
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	if sa.Metadata.Deleting() {
		return newError(http.StatusConflict, object.ReasonConflict, "serviceaccount %q is being deleted", ref.name)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	enc := base64.RawURLEncoding.EncodeToString(secret)
	expires := time.Now().Add(ttl).UTC().Truncate(time.Second)
	tok := &object.Object{APIVersion: "homeostat.io/v1", Kind: "Token", Metadata: object.Meta{
		Namespace: ref.namespace, GenerateName: ref.name + "-",
		Labels:          map[string]string{LabelServiceAccount: ref.name},
		OwnerReferences: []object.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: ref.name, UID: sa.Metadata.UID}},
	}}
	if err := tok.SetSpec(tokenSpec{ServiceAccountName: ref.name, ServiceAccountUID: sa.Metadata.UID,
		SHA256: hashSecret(enc), ExpirationTimestamp: expires, Audiences: req.Spec.Audiences}); err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "encoding the token: %v", err)
	}
	tref := &resourceRef{res: s.reg.MustLookup("homeostat.io", "tokens"), group: "homeostat.io", version: "v1",
		plural: "tokens", namespace: ref.namespace}
	if tok, e = s.check(tref, tok); e != nil {
		return e
	}
	req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
	req.Metadata = object.Meta{Name: ref.name, Namespace: ref.namespace, CreationTimestamp: time.Now().UTC().Truncate(time.Second)}
	secs := int64(ttl / time.Second)
	req.Spec.ExpirationSeconds = &secs
	req.Status.ExpirationTimestamp = expires
	if !dry {
		if tref.store, err = s.storeFor(r.Context(), tref.res); err != nil {
			return storeError(tref, "", err)
		}
		created, err := tref.store.Create(r.Context(), tok)
		if err != nil {
			return storeError(tref, "", err)
		}
		s.afterWrite(r, tref, created)
		req.Status.Token = TokenPrefix + created.Metadata.Namespace + "_" + created.Metadata.Name + "_" + enc
	}
	writeJSON(w, http.StatusCreated, req)
	return nil
}

// readTokenRequest reads a TokenRequest in JSON, YAML or protobuf (what
// kubectl sends); an empty body asks for the defaults.
func (s *Service) readTokenRequest(r *http.Request) (*tokenRequest, *apiError) {
	var req tokenRequest
	if r.ContentLength == 0 {
		return &req, nil
	}
	data, mt, e := s.readBodyAs(r, map[string]bool{"application/json": true, "application/yaml": true,
		"application/x-yaml": true, "text/yaml": true, protobufType: true}, "application/json, application/yaml or "+protobufType)
	if e != nil {
		return nil, e
	}
	if mt == protobufType {
		pr, err := decodeTokenRequestProto(data)
		if err != nil {
			return nil, badRequest("the body is not a TokenRequest: %v", err)
		}
		return pr, nil
	}
	if data, e = asJSON(data, mt); e != nil {
		return nil, e
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, badRequest("the body is not a TokenRequest: %v", err)
	}
	return &req, nil
}

// tokenTTL checks a TokenRequest's spec and says how long its token lives.
func tokenTTL(ref *resourceRef, req *tokenRequest) (time.Duration, *apiError) {
	if req.APIVersion != "" && req.APIVersion != "authentication.k8s.io/v1" || req.Kind != "" && req.Kind != "TokenRequest" {
		return 0, badRequest("the body must be an authentication.k8s.io/v1 TokenRequest, not %s %s", req.APIVersion, req.Kind)
	}
	if len(req.Spec.BoundObjectRef) > 0 && string(req.Spec.BoundObjectRef) != "null" {
		return 0, invalidField(ref, ref.name, "spec.boundObjectRef", "unsupported",
			"tokens bound to an object are not supported; revoke a token by deleting it (tokens.homeostat.io)")
	}
	if req.Spec.ExpirationSeconds == nil {
		return defaultTokenTTL, nil
	}
	ttl := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	switch {
	case ttl < minTokenTTL:
		return 0, invalidField(ref, ref.name, "spec.expirationSeconds", "minimum", "may not specify a duration less than 10 minutes")
	case *req.Spec.ExpirationSeconds > int64(maxTokenTTL/time.Second):
		return 0, invalidField(ref, ref.name, "spec.expirationSeconds", "maximum", "may not specify a duration larger than 2^32 seconds")
	}
	return ttl, nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// errToken is why a bearer token names no one; its text goes in the 401.
var errToken = errors.New("invalid bearer token")

// tokenUser is the ServiceAccount a bearer token stands for. The Token
// and ServiceAccount are read from the API's caches, and from the store
// when a cache has not seen them yet (a token issued a moment ago by
// another API process).
func (s *Service) tokenUser(ctx context.Context, token string) (*User, error) {
	ns, name, secret, ok := SplitToken(token)
	if !ok {
		return nil, fmt.Errorf("%w: not a token of this cluster (hst_…)", errToken)
	}
	tok, err := s.cachedGet(ctx, s.caches().tokens, "homeostat.io", "tokens", object.Key(ns, name))
	if errors.Is(err, bus.ErrNotFound) || err == nil && tok.Metadata.Deleting() {
		return nil, fmt.Errorf("%w: token %s/%s has been revoked or never existed", errToken, ns, name)
	}
	if err != nil {
		return nil, err
	}
	var spec tokenSpec
	if err := tok.DecodeSpec(&spec); err != nil {
		return nil, fmt.Errorf("%w: token %s/%s is unreadable: %v", errToken, ns, name, err)
	}
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(spec.SHA256)) != 1 {
		return nil, fmt.Errorf("%w: token %s/%s: the secret does not match", errToken, ns, name)
	}
	if !time.Now().Before(spec.ExpirationTimestamp) {
		return nil, fmt.Errorf("%w: token %s/%s expired at %s", errToken, ns, name, spec.ExpirationTimestamp.Format(time.RFC3339))
	}
	sa, err := s.cachedGet(ctx, s.caches().accounts, "", "serviceaccounts", object.Key(ns, spec.ServiceAccountName))
	if errors.Is(err, bus.ErrNotFound) || err == nil && (sa.Metadata.UID != spec.ServiceAccountUID || sa.Metadata.Deleting()) {
		return nil, fmt.Errorf("%w: serviceaccount %s/%s of token %s no longer exists", errToken, ns, spec.ServiceAccountName, name)
	}
	if err != nil {
		return nil, err
	}
	return &User{Name: "system:serviceaccount:" + ns + ":" + spec.ServiceAccountName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, GroupAuthenticated}}, nil
}

// SplitToken parses hst_<namespace>_<name>_<secret>, a ServiceAccount's token.
func SplitToken(token string) (ns, name, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "_", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// sweepTokens deletes Tokens past their expiry, so that they do not pile up.
func (s *Service) sweepTokens(ctx context.Context) {
	inf := s.caches().tokens
	if inf == nil {
		return
	}
	now := time.Now()
	for _, o := range inf.List() {
		var spec tokenSpec
		if o.DecodeSpec(&spec) != nil || now.Before(spec.ExpirationTimestamp) {
			continue
		}
		rev, _ := bus.Revision(o.Metadata.ResourceVersion)
		_, _, err := inf.Store().Delete(ctx, o.Key(), bus.DeleteOptions{Revision: rev})
		if err != nil && !errors.Is(err, bus.ErrNotFound) && !errors.Is(err, bus.ErrConflict) {
			s.log.Warn("deleting an expired token", "token", o.Key(), "err", err)
		}
	}
}
