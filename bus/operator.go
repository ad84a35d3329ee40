package bus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/homeostat/homeostat/pki"
)

// Operator holds the keys that decide who may use the bus, in NATS's
// decentralized mode: the operator, the account Homeostat's buckets and
// streams live in, and the server's system account. A client's credentials
// are a user JWT the account signs, carrying the client's permissions, so
// that credentials for a node that joins later are minted without touching
// the server. The seeds stay with whoever runs the control plane.
type Operator struct {
	operator, account, system nkeys.KeyPair
}

// Seed files of an operator's directory.
const (
	operatorSeedFile = "operator.nk"
	accountSeedFile  = "account.nk"
	systemSeedFile   = "system.nk"
)

// LoadOperator reads the operator's seeds from dir, making any that are
// missing (first start). The files are readable by their owner only.
func LoadOperator(dir string) (*Operator, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var o Operator
	for _, k := range []struct {
		file   string
		create func() (nkeys.KeyPair, error)
		into   *nkeys.KeyPair
	}{
		{operatorSeedFile, nkeys.CreateOperator, &o.operator},
		{accountSeedFile, nkeys.CreateAccount, &o.account},
		{systemSeedFile, nkeys.CreateAccount, &o.system},
	} {
		kp, err := loadOrCreateKey(filepath.Join(dir, k.file), k.create)
		if err != nil {
			return nil, err
		}
		*k.into = kp
	}
	return &o, nil
}

func loadOrCreateKey(path string, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, error) {
	seed, err := os.ReadFile(path)
	if err == nil {
		kp, err := nkeys.FromSeed(seed)
		if err != nil {
			return nil, fmt.Errorf("bus: %s: not an NKey seed: %w", path, err)
		}
		return kp, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	kp, err := create()
	if err != nil {
		return nil, err
	}
	if seed, err = kp.Seed(); err != nil {
		return nil, err
	}
	return kp, pki.WriteFile(path, seed, 0o600)
}

// jwts are the operator's and accounts' claims, signed now.
type jwts struct {
	operator, account, system string
	accountKey, systemKey     string
}

func (o *Operator) sign() (*jwts, error) {
	var out jwts
	var err error
	if out.accountKey, err = o.account.PublicKey(); err != nil {
		return nil, err
	}
	if out.systemKey, err = o.system.PublicKey(); err != nil {
		return nil, err
	}
	opKey, err := o.operator.PublicKey()
	if err != nil {
		return nil, err
	}
	oc := jwt.NewOperatorClaims(opKey)
	oc.Name = "homeostat"
	oc.SystemAccount = out.systemKey
	if out.operator, err = oc.Encode(o.operator); err != nil {
		return nil, err
	}
	ac := jwt.NewAccountClaims(out.accountKey)
	ac.Name = "homeostat"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1,
		MaxAckPending: -1, MemoryMaxStreamBytes: -1, DiskMaxStreamBytes: -1}
	if out.account, err = ac.Encode(o.operator); err != nil {
		return nil, err
	}
	sc := jwt.NewAccountClaims(out.systemKey)
	sc.Name = "system"
	if out.system, err = sc.Encode(o.operator); err != nil {
		return nil, err
	}
	return &out, nil
}

// serverOptions make an embedded server trust the operator.
func (o *Operator) serverOptions(opts *server.Options) error {
	j, err := o.sign()
	if err != nil {
		return err
	}
	oc, err := jwt.DecodeOperatorClaims(j.operator)
	if err != nil {
		return err
	}
	resolver := &server.MemAccResolver{}
	for key, token := range map[string]string{j.accountKey: j.account, j.systemKey: j.system} {
		if err := resolver.Store(key, token); err != nil {
			return err
		}
	}
	opts.MaxControlLine = maxControlLine
	opts.TrustedOperators = []*jwt.OperatorClaims{oc}
	opts.SystemAccount = j.systemKey
	opts.AccountResolver = resolver
	return nil
}

// accountKey is the public key of the account Homeostat's data lives in.
func (o *Operator) accountKey() (string, error) { return o.account.PublicKey() }

// maxControlLine bounds a protocol line on a server trusting the operator.
// A node's credentials name each subject of each stream it reads (pods,
// nodes, Services, EndpointSlices): their JWT, which a client
// sends in its CONNECT line, outgrew NATS's default of 4 KiB.
const maxControlLine = 16 << 10

// ServerConfig is the part of a nats-server configuration file that makes
// a server trust the operator: for a deployment of separate servers.
func (o *Operator) ServerConfig() ([]byte, error) {
	j, err := o.sign()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "max_control_line: %d\n", maxControlLine)
	fmt.Fprintf(&b, "operator: %q\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n", j.operator, j.systemKey)
	fmt.Fprintf(&b, "  %s: %q\n  %s: %q\n}\n", j.accountKey, j.account, j.systemKey, j.system)
	return []byte(b.String()), nil
}

// ControlPlaneCreds are credentials for the whole account: the API's
// (RoleCreds(RoleAPI)), and tests'. Other roles get RoleCreds.
func (o *Operator) ControlPlaneCreds(name string) ([]byte, error) {
	return o.creds(name, jwt.Permissions{})
}

// NodeCreds are credentials for one node's agent: it may read the pods
// and nodes, write only its own Node and Lease object, and ask the node
// relay to write its pods' status and its heartbeat lease.
func (o *Operator) NodeCreds(node string) ([]byte, error) {
	if err := validNodeName(node); err != nil {
		return nil, err
	}
	return o.creds(nodeUserPrefix+node, nodePermissions(node))
}

func (o *Operator) creds(name string, perms jwt.Permissions) ([]byte, error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, err := user.PublicKey()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	uc.Permissions = perms
	token, err := uc.Encode(o.account)
	if err != nil {
		return nil, err
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(token, seed)
}

// Issued reports whether creds are credentials this operator's account
// signed (and so still good after the seeds were made again, or not).
func (o *Operator) Issued(creds []byte) bool {
	uc, err := userClaims(creds)
	if err != nil {
		return false
	}
	acct, err := o.accountKey()
	return err == nil && uc.Issuer == acct
}

// dnsSubdomain is the form of a node's name (RFC 1123 subdomain), which
// keeps it free of NATS wildcards and of the '_' its subject token uses.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func validNodeName(node string) error {
	if len(node) > 253 || !dnsSubdomain.MatchString(node) {
		return fmt.Errorf("%w: node name %q: must be a lowercase RFC 1123 subdomain (letters, digits, '-', '.')", ErrInvalid, node)
	}
	return nil
}

// nodeToken is a node's name as one subject token: dots would split it,
// and node "a" could then claim the subjects of node "a.b".
func nodeToken(node string) string { return strings.ReplaceAll(node, ".", "_") }

// tokenNode is the node a subject token names.
func tokenNode(token string) string { return strings.ReplaceAll(token, "_", ".") }

// nodeInbox is where a node's replies come: its own, so that it cannot
// read the replies others are sent.
func nodeInbox(node string) string { return "_INBOX_" + nodeToken(node) }

// nodeLeaseObjects is the bucket of Lease objects (coordination.k8s.io).
var nodeLeaseObjects = bucketName("leases.coordination.k8s.io")

// nodeReadStreams are the streams a node's agent reads whole.
// Its proxy reads Services and their EndpointSlices, as kube-proxy does.
var nodeReadStreams = []string{kvStream(bucketName("pods")), kvStream(bucketName("nodes")), kvStream(metaBucket),
	kvStream(bucketName("services")), kvStream(bucketName("endpointslices.discovery.k8s.io"))}

// nodeObjectBuckets are the buckets of objects an agent opens.
var nodeObjectBuckets = []string{bucketName("pods"), bucketName("nodes"), bucketName("services"),
	bucketName("endpointslices.discovery.k8s.io"), nodeLeaseObjects}

// nodePermissions: reading through the JetStream API's read side only, and
// only the streams an agent reads (no stream or consumer management, no
// acknowledgements, consumers only on those streams and on its own part of
// the pod index), subscribing only to its own inbox (so that no stream can
// be made to deliver into a subject it listens on), and publishing only its
// own keys and requests to the relay. No subject of the leases' bucket,
// which allows rollups: its heartbeat goes through the relay.
func nodePermissions(node string) jwt.Permissions {
	var p jwt.Permissions
	pub := []string{
		"$JS.API.INFO",
		kvPrefix(bucketName("nodes")) + node,
		// Its Lease object in kube-node-lease, which it reads back through
		// the stream's leader (Lease objects hold no secrets).
		kvPrefix(nodeLeaseObjects) + "kube-node-lease." + node,
		"$JS.API.STREAM.INFO." + kvStream(nodeLeaseObjects), "$JS.API.STREAM.MSG.GET." + kvStream(nodeLeaseObjects),
		relaySubject(node), heartbeatSubject(node),
		"$JS.API.STREAM.INFO." + nodePodsStream,
		"$JS.API.CONSUMER.CREATE." + nodePodsStream + ".*." + nodePodsPrefix + nodeToken(node) + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + nodePodsStream + ".*",
		"$JS.API.CONSUMER.INFO." + nodePodsStream + ".*",
		"$JS.API.CONSUMER.DELETE." + nodePodsStream + ".*",
	}
	// A read that must hold every acknowledged write writes a
	// confirmation first (see confirm.go).
	for _, b := range nodeObjectBuckets {
		pub = append(pub, confirmSubject(b))
	}
	for _, s := range nodeReadStreams {
		pub = append(pub, "$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.MSG.GET."+s, "$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
			"$JS.API.CONSUMER.CREATE."+s+".>", "$JS.API.CONSUMER.MSG.NEXT."+s+".*",
			"$JS.API.CONSUMER.INFO."+s+".*", "$JS.API.CONSUMER.DELETE."+s+".*")
	}
	sort.Strings(pub)
	p.Pub.Allow.Add(pub...)
	p.Sub.Allow.Add(nodeInbox(node) + ".>")
	return p
}
