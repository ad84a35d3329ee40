// Package kubeconfig reads and writes client configuration files in the
// format kubectl uses, and turns a context of one into an HTTP client: the
// server's URL, the authority to trust, and the credentials to present (a
// client certificate or a bearer token). Only the fields Homeostat's
// clients use are read; files are written 0600, since they hold keys.
package kubeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is a kubeconfig file.
type Config struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []NamedCluster `json:"clusters"`
	Users          []NamedUser    `json:"users"`
	Contexts       []NamedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`

	// dir resolves the relative file paths of a loaded file.
	dir string
}

// NamedCluster is a server and how to trust it.
type NamedCluster struct {
	Name    string  `json:"name"`
	Cluster Cluster `json:"cluster"`
}

// Cluster is a server and how to trust it.
type Cluster struct {
	Server                   string `json:"server"`
	CertificateAuthority     string `json:"certificate-authority,omitempty"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
	TLSServerName            string `json:"tls-server-name,omitempty"`
}

// NamedUser is a set of credentials.
type NamedUser struct {
	Name string `json:"name"`
	User User   `json:"user"`
}

// User is a set of credentials.
type User struct {
	ClientCertificate     string `json:"client-certificate,omitempty"`
	ClientCertificateData []byte `json:"client-certificate-data,omitempty"`
	ClientKey             string `json:"client-key,omitempty"`
	ClientKeyData         []byte `json:"client-key-data,omitempty"`
	Token                 string `json:"token,omitempty"`
	TokenFile             string `json:"tokenFile,omitempty"`
}

// NamedContext pairs a cluster with a user.
type NamedContext struct {
	Name    string  `json:"name"`
	Context Context `json:"context"`
}

// Context pairs a cluster with a user and a default namespace.
type Context struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
}

// ErrNotFound is returned by Load when no file exists at the path.
var ErrNotFound = errors.New("kubeconfig: no such file")

// Locate picks the file to read: the flag when set, else the first path of
// $KUBECONFIG (a list, as kubectl reads it) that exists, else def.
func Locate(flag, env, def string) string {
	if flag != "" {
		return flag
	}
	for _, p := range filepath.SplitList(env) {
		if _, err := os.Stat(p); p != "" && err == nil {
			return p
		}
	}
	return def
}

// Load reads a file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	return &c, nil
}

// LoadTarget reads a file and resolves its current context.
func LoadTarget(path string) (*Target, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	return c.Target("")
}

// Write writes the file, readable by its owner only.
func (c *Config) Write(path string) error {
	if c.APIVersion == "" {
		c.APIVersion, c.Kind = "v1", "Config"
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// A temporary file of its own, renamed over the file: writers that
	// share a data directory (API replicas) may write at once, and a
	// shared temporary name let one's rename find the other's gone.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

// Target is what a client needs to reach a server as a user.
type Target struct {
	Server    string
	Namespace string
	// TLS is the client's TLS configuration, nil for a plain http server.
	TLS   *tls.Config
	Token string
	// As and AsGroups ask the server to take the requests as another
	// user's (kubectl --as, --as-group); the credentials' holder must be
	// allowed to impersonate them.
	As       string
	AsGroups []string
}

// Target resolves a context (the current one when name is empty).
func (c *Config) Target(name string) (*Target, error) {
	name, ctx, cl, u, err := c.resolve(name)
	if err != nil {
		return nil, err
	}
	t := &Target{Server: cl.Server, Namespace: ctx.Namespace}
	if strings.HasPrefix(cl.Server, "https://") {
		cfg, err := c.tlsConfig(cl, &u)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: context %q: %w", name, err)
		}
		t.TLS = cfg
	}
	t.Token = u.Token
	if u.TokenFile != "" {
		b, err := os.ReadFile(c.path(u.TokenFile))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: context %q: tokenFile: %w", name, err)
		}
		t.Token = strings.TrimSpace(string(b))
	}
	return t, nil
}

// resolve finds a context (the current one when name is empty), its
// cluster and its user.
func (c *Config) resolve(name string) (string, *Context, *Cluster, User, error) {
	if name == "" {
		name = c.CurrentContext
	}
	var ctx *Context
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			ctx = &c.Contexts[i].Context
		}
	}
	if ctx == nil {
		return name, nil, nil, User{}, fmt.Errorf("kubeconfig: no context %q", name)
	}
	var cl *Cluster
	for i := range c.Clusters {
		if c.Clusters[i].Name == ctx.Cluster {
			cl = &c.Clusters[i].Cluster
		}
	}
	if cl == nil {
		return name, nil, nil, User{}, fmt.Errorf("kubeconfig: context %q names no cluster %q", name, ctx.Cluster)
	}
	var u User
	for i := range c.Users {
		if c.Users[i].Name == ctx.User {
			u = c.Users[i].User
		}
	}
	return name, ctx, cl, u, nil
}

// WithToken is a self-contained kubeconfig for the cluster of a context
// (the current one when context is empty), its authority inlined, with
// one user who presents a bearer token.
func (c *Config) WithToken(context, user, token string) (*Config, error) {
	_, ctx, cl, _, err := c.resolve(context)
	if err != nil {
		return nil, err
	}
	out := *cl
	if out.CertificateAuthority != "" {
		if out.CertificateAuthorityData, err = c.data(nil, out.CertificateAuthority); err != nil {
			return nil, err
		}
		out.CertificateAuthority = ""
	}
	return &Config{
		Clusters:       []NamedCluster{{Name: ctx.Cluster, Cluster: out}},
		Users:          []NamedUser{{Name: user, User: User{Token: token}}},
		Contexts:       []NamedContext{{Name: user, Context: Context{Cluster: ctx.Cluster, User: user, Namespace: ctx.Namespace}}},
		CurrentContext: user,
	}, nil
}

func (c *Config) tlsConfig(cl *Cluster, u *User) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cl.TLSServerName, InsecureSkipVerify: cl.InsecureSkipTLSVerify}
	ca, err := c.data(cl.CertificateAuthorityData, cl.CertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("certificate-authority: %w", err)
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("certificate-authority holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	cert, err := c.data(u.ClientCertificateData, u.ClientCertificate)
	if err != nil {
		return nil, fmt.Errorf("client-certificate: %w", err)
	}
	key, err := c.data(u.ClientKeyData, u.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("client-key: %w", err)
	}
	if cert != nil || key != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// data is inline data, or the contents of a file, or nil.
func (c *Config) data(inline []byte, file string) ([]byte, error) {
	if len(inline) > 0 {
		return inline, nil
	}
	if file == "" {
		return nil, nil
	}
	return os.ReadFile(c.path(file))
}

// path resolves a path relative to the file it was read from, as kubectl
// does.
func (c *Config) path(p string) string {
	if filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// HTTPClient is a client that reaches the target: its TLS configuration,
// and its bearer token on every request.
func (t *Target) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = t.TLS
	return &http.Client{Transport: t.Wrap(tr)}
}

// Wrap gives base's requests the target's bearer token and
// impersonation; base brings the TLS (an upgrading round tripper, say).
func (t *Target) Wrap(base http.RoundTripper) http.RoundTripper {
	rt := base
	if t.Token != "" {
		rt = bearer{token: t.Token, next: rt}
	}
	if t.As != "" {
		rt = impersonation{user: t.As, groups: t.AsGroups, next: rt}
	}
	return rt
}

type impersonation struct {
	user   string
	groups []string
	next   http.RoundTripper
}

func (i impersonation) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Impersonate-User", i.user)
	for _, g := range i.groups {
		r.Header.Add("Impersonate-Group", g)
	}
	return i.next.RoundTrip(r)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
