package net

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Options configure a Server. Zero values take the defaults named on each field; the
// setting names (Kafka's where Kafka has one) are those Set accepts, and docs/limits.md
// ("Connections and requests") says why each default is what it is.
type Options struct {
	// MaxRequestBytes is the largest request frame accepted (socket.request.max.bytes).
	// Default 100 MiB.
	MaxRequestBytes int
	// MaxInFlight bounds the requests of one connection that await their response; the
	// server stops reading the socket while it is reached
	// (sluice.connection.max.inflight.requests). Default 1000.
	MaxInFlight int
	// MaxInFlightBytes bounds the request bytes of one connection that await their
	// response; one request is always let through, however large
	// (sluice.connection.max.inflight.bytes). Default 64 MiB.
	MaxInFlightBytes int
	// MaxConns bounds open connections; past it new connections are closed at once
	// (max.connections). Default 10000.
	MaxConns int
	// MaxConnsPerIP bounds the open connections of one client address; past it that
	// address's new connections are closed at once (max.connections.per.ip).
	// Default 1000.
	MaxConnsPerIP int
	// MaxConnsPerIPOverrides replaces MaxConnsPerIP for the addresses it names
	// (max.connections.per.ip.overrides, "ip:n,ip:m").
	MaxConnsPerIPOverrides map[string]int
	// IdleTimeout closes a connection that has had no request in flight and sent
	// nothing for that long (connections.max.idle.ms). Default 10 minutes.
	IdleTimeout time.Duration
	// RequestReadTimeout bounds the reading of one request frame, from its first byte
	// to its last, waiting for QueuedMaxRequestBytes included
	// (sluice.request.read.timeout.ms). Default 30s.
	RequestReadTimeout time.Duration
	// WriteTimeout closes a connection whose client takes none of a response's bytes
	// for that long (sluice.connection.write.timeout.ms). Default 30s.
	WriteTimeout time.Duration
	// QueuedMaxRequestBytes bounds the request bytes the whole node holds: frames being
	// read plus requests awaiting their response (queued.max.request.bytes). A reader
	// reserves its frame's size before reading the body and waits while the budget is
	// spent. Negative: unbounded, as Kafka's -1. Default 256 MiB.
	QueuedMaxRequestBytes int64
	// MaxQueuedResponseBytes bounds the response bytes one connection may have queued
	// and unwritten (counted at the Fetch's asked size when it is read); the server
	// stops reading the connection's requests while it is reached
	// (sluice.connection.max.queued.response.bytes). Default 64 MiB.
	MaxQueuedResponseBytes int
	// QueuedMaxResponseBytes: while the node's answered but unwritten response bytes
	// pass it, no connection's next Fetch is read (sluice.queued.max.response.bytes).
	// Negative: unbounded. Default 512 MiB.
	QueuedMaxResponseBytes int64
	// SASLMaxReceiveSize bounds the frames of a SASL listener's connection until it is
	// authenticated (sasl.server.max.receive.size). Default 512 KiB, Kafka's.
	SASLMaxReceiveSize int
	// SASLAuthTimeout closes a SASL connection whose authentication (or
	// re-authentication) has not ended that long after it began
	// (sluice.sasl.authentication.timeout.ms). Default 10s.
	SASLAuthTimeout time.Duration
	// FailedAuthDelay delays the answer to a failed authentication, and the close
	// after it (connection.failed.authentication.delay.ms). Default 100ms; negative:
	// none.
	FailedAuthDelay time.Duration
	// ReauthAfter is the lifetime of an authenticated SASL session
	// (connections.max.reauth.ms, KIP-368): the client is told, and must authenticate
	// again before it ends. 0 (the default): sessions do not expire.
	ReauthAfter time.Duration
	// Logger receives connection errors. Default: no logging.
	Logger *zap.Logger
	// Observer, when set, is told of every request the server answers (the node's
	// metrics; observe.go). Nil: nothing is observed and no clock is read per request.
	Observer RequestObserver
}

func (o *Options) defaults() {
	setDefault(&o.MaxRequestBytes, 100<<20)
	setDefault(&o.MaxInFlight, 1000)
	setDefault(&o.MaxInFlightBytes, 64<<20)
	setDefault(&o.MaxConns, 10000)
	setDefault(&o.MaxConnsPerIP, 1000)
	setDefault(&o.IdleTimeout, 10*time.Minute)
	setDefault(&o.RequestReadTimeout, 30*time.Second)
	setDefault(&o.WriteTimeout, 30*time.Second)
	setDefault(&o.MaxQueuedResponseBytes, 64<<20)
	setDefault(&o.SASLMaxReceiveSize, 512<<10)
	setDefault(&o.SASLAuthTimeout, 10*time.Second)
	if o.FailedAuthDelay == 0 {
		o.FailedAuthDelay = 100 * time.Millisecond
	}
	if o.QueuedMaxRequestBytes == 0 {
		o.QueuedMaxRequestBytes = 256 << 20
	}
	if o.QueuedMaxResponseBytes == 0 {
		o.QueuedMaxResponseBytes = 512 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// maxConnsOf is the connection cap of one client address.
func (o *Options) maxConnsOf(ip string) int {
	if n, ok := o.MaxConnsPerIPOverrides[ip]; ok {
		return n
	}
	return o.MaxConnsPerIP
}

// settingNames are the config-file keys Set accepts, for `sluice node -h`.
var settingNames = []string{
	"socket.request.max.bytes", "max.connections", "max.connections.per.ip",
	"max.connections.per.ip.overrides", "connections.max.idle.ms",
	"queued.max.request.bytes", "sluice.request.read.timeout.ms",
	"sluice.connection.write.timeout.ms", "sluice.connection.max.inflight.requests",
	"sluice.connection.max.inflight.bytes", "sluice.connection.max.queued.response.bytes",
	"sluice.queued.max.response.bytes", "sasl.server.max.receive.size",
	"sluice.sasl.authentication.timeout.ms", "connection.failed.authentication.delay.ms",
	"connections.max.reauth.ms",
}

// SettingNames lists the config-file keys Options.Set accepts.
func SettingNames() []string { return append([]string(nil), settingNames...) }

// Set applies one config-file setting. known is false when key is not a connection
// setting (the caller tries its other settings); err says why a known one's value is
// refused.
func (o *Options) Set(key, value string) (known bool, err error) {
	value = strings.TrimSpace(value)
	switch key {
	case "socket.request.max.bytes":
		return true, setInt(&o.MaxRequestBytes, key, value, 1)
	case "max.connections":
		return true, setInt(&o.MaxConns, key, value, 1)
	case "max.connections.per.ip":
		return true, setInt(&o.MaxConnsPerIP, key, value, 1)
	case "max.connections.per.ip.overrides":
		o.MaxConnsPerIPOverrides, err = parseOverrides(value)
		return true, err
	case "connections.max.idle.ms":
		return true, setMillis(&o.IdleTimeout, key, value)
	case "sluice.request.read.timeout.ms":
		return true, setMillis(&o.RequestReadTimeout, key, value)
	case "sluice.connection.write.timeout.ms":
		return true, setMillis(&o.WriteTimeout, key, value)
	case "queued.max.request.bytes":
		return true, setBudget(&o.QueuedMaxRequestBytes, key, value)
	case "sluice.queued.max.response.bytes":
		return true, setBudget(&o.QueuedMaxResponseBytes, key, value)
	case "sluice.connection.max.inflight.requests":
		return true, setInt(&o.MaxInFlight, key, value, 1)
	case "sluice.connection.max.inflight.bytes":
		return true, setInt(&o.MaxInFlightBytes, key, value, 1)
	case "sluice.connection.max.queued.response.bytes":
		return true, setInt(&o.MaxQueuedResponseBytes, key, value, 1)
	case "sasl.server.max.receive.size":
		return true, setInt(&o.SASLMaxReceiveSize, key, value, 1)
	case "sluice.sasl.authentication.timeout.ms":
		return true, setMillis(&o.SASLAuthTimeout, key, value)
	case "connection.failed.authentication.delay.ms", "connections.max.reauth.ms":
		return true, o.setZeroMillis(key, value)
	}
	return false, nil
}

func setInt(dst *int, key, value string, least int) error {
	n, err := strconv.Atoi(value)
	if err != nil || n < least {
		return fmt.Errorf("%s: want an integer >= %d, got %q", key, least, value)
	}
	*dst = n
	return nil
}

func setMillis(dst *time.Duration, key, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || n > int64(24*time.Hour/time.Millisecond)*365 {
		return fmt.Errorf("%s: want milliseconds >= 1, got %q", key, value)
	}
	*dst = time.Duration(n) * time.Millisecond
	return nil
}

// setBudget takes a byte count, or -1 for unbounded (Kafka's queued.max.request.bytes
// convention).
func setBudget(dst *int64, key, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n == 0 || n < -1 {
		return fmt.Errorf("%s: want a byte count >= 1, or -1 for unbounded, got %q", key, value)
	}
	*dst = n
	return nil
}

// parseOverrides reads Kafka's "host:n,host:m". Hosts must be IP addresses: the cap is
// checked against the connection's remote address, and resolving names at start would
// make the limit depend on DNS.
func parseOverrides(value string) (map[string]int, error) {
	m := map[string]int{}
	if value == "" {
		return m, nil
	}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndexByte(item, ':')
		if i < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: want ip:n, got %q", item)
		}
		ip := net.ParseIP(strings.Trim(item[:i], "[]"))
		if ip == nil {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not an IP address",
				item[:i])
		}
		n, err := strconv.Atoi(item[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: want a count >= 0 in %q",
				item)
		}
		m[ip.String()] = n
	}
	return m, nil
}

// setZeroMillis sets one of the millisecond settings for which 0 means "none".
func (o *Options) setZeroMillis(key, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 || n > int64(24*time.Hour/time.Millisecond)*365 {
		return fmt.Errorf("%s: want milliseconds >= 0, got %q", key, value)
	}
	d := time.Duration(n) * time.Millisecond
	switch key {
	case "connection.failed.authentication.delay.ms":
		if d == 0 {
			d = -1 // none (zero takes the default)
		}
		o.FailedAuthDelay = d
	default:
		o.ReauthAfter = d
	}
	return nil
}
