package main

// Shared plumbing of the client commands (topic, produce, consume): flag parsing that
// lets flags follow positional arguments, the --bootstrap/--timeout pair, connecting with
// a bounded first contact, and turning franz-go and Kafka errors into sentences.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	kafkanet "github.com/sluicemq/sluice/net"
)

const (
	defaultBootstrap = "127.0.0.1:9092"
	defaultTimeout   = 10 * time.Second
)

// errUsage marks a command-line mistake: the flag package has already printed the
// problem and the usage, so the caller only has to exit with status 2.
var errUsage = errors.New("usage error")

// clientFlags are the flags every client command shares.
type clientFlags struct {
	bootstrap string
	timeout   time.Duration
	// SASL on a SASL_PLAINTEXT listener: the mechanism and credentials, from the flags
	// or the SLUICE_SASL_* environment variables.
	saslMechanism, saslUser, saslPassword string
	tls                                   clientTLS
	saslTokenFile                         string // OAUTHBEARER's token
}

// The environment variables the SASL flags default to (a password on the command line
// is visible to every user of the machine in the process list).
const (
	envSASLMechanism = "SLUICE_SASL_MECHANISM"
	envSASLUser      = "SLUICE_SASL_USER"
	envSASLPassword  = "SLUICE_SASL_PASSWORD"
	envSASLToken     = "SLUICE_SASL_TOKEN"
)

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.bootstrap, "bootstrap", defaultBootstrap,
		"comma-separated `host:port` list of brokers to contact first")
	fs.DurationVar(&c.timeout, "timeout", defaultTimeout,
		"bound on each client operation (connecting, a request, delivering a record)")
	fs.StringVar(&c.saslMechanism, "sasl-mechanism", os.Getenv(envSASLMechanism),
		"authenticate with SASL `mechanism` PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or "+
			"OAUTHBEARER "+
			"(a SASL_PLAINTEXT listener; env "+envSASLMechanism+")")
	fs.StringVar(&c.saslUser, "sasl-user", os.Getenv(envSASLUser),
		"SASL user name (env "+envSASLUser+")")
	fs.StringVar(&c.saslPassword, "sasl-password", "",
		"SASL password; prefer env "+envSASLPassword+", which the process list does not show")
	c.tls.register(fs)
	fs.StringVar(&c.saslTokenFile, "sasl-token-file", "",
		"OAUTHBEARER: `file` holding the token (or env "+envSASLToken+")")
}

// saslOpts are the client options of the SASL flags: none without a mechanism.
func (c *clientFlags) saslOpts() ([]kgo.Opt, error) {
	if c.saslMechanism == "" {
		if c.saslUser != "" {
			return nil, errors.New("--sasl-user needs --sasl-mechanism")
		}
		return nil, nil
	}
	if strings.EqualFold(c.saslMechanism, kafkanet.MechOAuthBearer) {
		return c.oauthOpts()
	}
	pw := c.saslPassword
	if pw == "" {
		pw = os.Getenv(envSASLPassword)
	}
	if c.saslUser == "" || pw == "" {
		return nil, errors.New("--sasl-mechanism needs --sasl-user and a password " +
			"(--sasl-password or " + envSASLPassword + ")")
	}
	m, err := kafkanet.ClientSASL(c.saslMechanism, c.saslUser, pw)
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{kgo.SASL(m)}, nil
}

// oauthOpts authenticate with OAUTHBEARER: the token from --sasl-token-file or
// SLUICE_SASL_TOKEN; --sasl-user, when given, is the authorization id.
func (c *clientFlags) oauthOpts() ([]kgo.Opt, error) {
	token := os.Getenv(envSASLToken)
	if c.saslTokenFile != "" {
		b, err := os.ReadFile(c.saslTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--sasl-token-file: %w", err)
		}
		token = string(b)
	}
	if token = strings.TrimSpace(token); token == "" {
		return nil, errors.New("--sasl-mechanism OAUTHBEARER needs a token " +
			"(--sasl-token-file or " + envSASLToken + ")")
	}
	m, err := kafkanet.ClientSASL(kafkanet.MechOAuthBearer, c.saslUser, token)
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{kgo.SASL(m)}, nil
}

// seeds splits --bootstrap into addresses, dropping empty items so "a:1," works.
func (c *clientFlags) seeds() []string {
	var out []string
	for _, s := range strings.Split(c.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c *clientFlags) check() error {
	if len(c.seeds()) == 0 {
		return errors.New("--bootstrap needs at least one host:port")
	}
	if c.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s", c.timeout)
	}
	if _, err := c.saslOpts(); err != nil {
		return err
	}
	_, err := c.tls.opts()
	return err
}

// newFlagSet builds a command's FlagSet: errors return to the caller instead of exiting,
// and usage goes to stderr with the command's synopsis on top.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags wherever they appear among the positional arguments, so that
// `sluice topic create t --partitions 3` works as well as the flags-first order. A bare
// "--" ends flag parsing; everything after it is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseCommand runs parseArgs and checks the positional count. It returns errUsage (after
// printing why) for anything the user typed wrong, and flag.ErrHelp for -h.
func parseCommand(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	if err != nil {
		return nil, errUsage // flag has printed the message and the usage
	}
	if len(pos) != len(names) {
		switch {
		case len(pos) < len(names):
			fmt.Fprintf(fs.Output(), "%s: missing %s\n", fs.Name(), strings.Join(names[len(pos):], " "))
		default:
			fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), pos[len(names)])
		}
		fs.Usage()
		return nil, errUsage
	}
	return pos, nil
}

// usageErr prints a bad-argument message and the usage, and returns errUsage.
func usageErr(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// checkClient validates the shared flags after parsing.
func checkClient(fs *flag.FlagSet, cf clientFlags) error {
	if err := cf.check(); err != nil {
		return usageErr(fs, "%v", err)
	}
	return nil
}

// exitStatus turns a command's outcome into the process status, printing any error
// under the command's name.
func exitStatus(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// keyValues is a repeatable `k=v` flag (--config).
type keyValues struct {
	order  []string
	values map[string]string
}

func (kv *keyValues) String() string {
	if kv == nil {
		return ""
	}
	parts := make([]string, 0, len(kv.order))
	for _, k := range kv.order {
		parts = append(parts, k+"="+kv.values[k])
	}
	return strings.Join(parts, ",")
}

func (kv *keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	if kv.values == nil {
		kv.values = map[string]string{}
	}
	if _, dup := kv.values[k]; dup {
		return fmt.Errorf("%q given twice", k)
	}
	kv.order = append(kv.order, k)
	kv.values[k] = v
	return nil
}

// ptrMap is the form kadm wants for topic configs.
func (kv *keyValues) ptrMap() map[string]*string {
	if len(kv.order) == 0 {
		return nil
	}
	m := make(map[string]*string, len(kv.order))
	for _, k := range kv.order {
		v := kv.values[k]
		m[k] = &v
	}
	return m
}

// nameList is a repeatable plain-string flag (--delete-config).
type nameList []string

func (n *nameList) String() string { return strings.Join(*n, ",") }

func (n *nameList) Set(s string) error {
	if s = strings.TrimSpace(s); s == "" {
		return errors.New("empty name")
	}
	*n = append(*n, s)
	return nil
}

// connect builds a client and makes one bounded round trip to a broker, so that a node
// that is not running is reported at once in plain words instead of surfacing later as a
// retry loop or a bare deadline.
func connect(ctx context.Context, cf clientFlags, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(cf.seeds()...),
		kgo.DialTimeout(cf.timeout),
		kgo.RetryTimeout(cf.timeout),
		kgo.ClientID("sluice-cli"),
	}
	sasl, err := cf.saslOpts()
	if err != nil {
		return nil, err
	}
	base = append(base, sasl...)
	tlsOpts, err := cf.tls.opts()
	if err != nil {
		return nil, err
	}
	base = append(base, tlsOpts...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bad client settings: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if refused := authRefused(err); refused != nil {
			return nil, refused
		}
		if hint := tlsHint(err, len(tlsOpts) > 0); hint != nil {
			return nil, hint
		}
		return nil, unreachable(cf, err)
	}
	return cl, nil
}

// unreachable words a failed first contact.
func unreachable(cf clientFlags, err error) error {
	where := "a broker at " + cf.bootstrap
	if len(cf.seeds()) > 1 {
		where = "any broker of " + cf.bootstrap
	}
	hint := " (is `sluice node` running?)"
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		hint = fmt.Sprintf(" (cannot resolve host %q)", dnsErr.Name)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		hint = fmt.Sprintf(" within %s (is `sluice node` running, and is the address right?)",
			cf.timeout)
	}
	return fmt.Errorf("cannot reach %s%s", where, hint)
}

// authRefused words a first contact the broker refused for authentication, or nil.
func authRefused(err error) error {
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("authentication failed (wrong user or password?): %w", err)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("the broker does not enable this SASL mechanism: %w", err)
	case errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("SASL is not enabled on this listener: %w", err)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isConnErr reports errors that mean the broker went away mid-command.
func isConnErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

// friendly turns an error from a client call into a sentence about topic. Broker error
// codes get their own wording; detail is the broker's free-text message, if any.
func friendly(err error, topic, detail string) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke) && ke == kerr.InvalidTopicException && detail != "":
		// The broker says what is wrong with the name, e.g. that it collides with an
		// existing topic once '.' and '_' are treated alike.
		return fmt.Errorf("cannot use topic name %q: %s", topic, detail)
	case errors.As(err, &ke):
		msg, withDetail := kerrText(ke, topic)
		if withDetail && detail != "" {
			msg += ": " + detail
		}
		return errors.New(msg)
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("the broker did not answer in time (raise --timeout?)")
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	case isConnErr(err):
		return fmt.Errorf("lost the connection to the broker: %v", err)
	case isBrokerTooOld(err):
		return errors.New("the broker does not support this request yet")
	}
	return err
}

// isBrokerTooOld recognises kgo's refusal to send a request whose API key the broker did
// not advertise in ApiVersions. kgo does not export that error, so match its text.
func isBrokerTooOld(err error) bool {
	return err != nil && strings.Contains(err.Error(), "broker is too old")
}

// kerrText is the wording for each Kafka error code the CLI can meet. It also says
// whether the broker's own message adds anything: for the codes whose wording already
// names the problem completely, repeating the broker's sentence would only echo it.
func kerrText(ke *kerr.Error, topic string) (text string, withDetail bool) {
	switch ke {
	case kerr.TopicAlreadyExists:
		return fmt.Sprintf("topic %q already exists", topic), false
	case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
		return fmt.Sprintf("topic %q does not exist", topic), false
	case kerr.InvalidTopicException:
		return fmt.Sprintf("%q is not a valid topic name (use letters, digits, '.', '_' "+
			"and '-', at most 249 characters)", topic), false
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return fmt.Sprintf("a record is larger than topic %q accepts (max.message.bytes)",
			topic), false
	case kerr.NotLeaderForPartition, kerr.LeaderNotAvailable:
		return "a partition has no leader right now; try again shortly", false
	case kerr.KafkaStorageError:
		return "the broker could not write to its disk (KAFKA_STORAGE_ERROR: the disk is " +
			"full or failing; see the node's log)", false
	case kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return "too few in-sync replicas for acks=all (min.insync.replicas)", false
	case kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.GroupAuthorizationFailed:
		return "not authorized", false
	case kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return "the group coordinator is not available", false
	}
	return kerrDetailed(ke), true
}

// kerrDetailed words the codes whose broker message carries the specifics (which
// config, which limit), and any code without a wording of its own.
func kerrDetailed(ke *kerr.Error) string {
	switch ke {
	case kerr.InvalidPartitions:
		return "invalid partition count"
	case kerr.InvalidReplicationFactor:
		return "invalid replication factor"
	case kerr.InvalidReplicaAssignment:
		return "invalid replica assignment"
	case kerr.InvalidConfig:
		return "invalid config"
	case kerr.InvalidRequest:
		return "the broker rejected the request as invalid"
	case kerr.PolicyViolation:
		return "the broker's policy refused the request"
	case kerr.CorruptMessage:
		return "the broker found a record batch corrupt"
	case kerr.RequestTimedOut:
		return "the broker timed out handling the request"
	case kerr.UnsupportedVersion:
		return "the broker does not support this request version"
	case kerr.UnknownServerError:
		return "the broker hit an internal error (see its log)"
	}
	return fmt.Sprintf("the broker answered %s: %s", ke.Message, ke.Description)
}

// sortedKeys returns m's keys in order, so output never depends on map iteration.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
