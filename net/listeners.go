package net

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Protocol is a listener's security protocol (Kafka's security.protocol names).
type Protocol string

// The security protocols.
const (
	Plaintext     Protocol = "PLAINTEXT"
	SSL           Protocol = "SSL"
	SASLPlaintext Protocol = "SASL_PLAINTEXT"
	SASLSSL       Protocol = "SASL_SSL"
)

// UsesTLS says whether connections of the protocol speak TLS.
func (p Protocol) UsesTLS() bool { return p == SSL || p == SASLSSL }

// UsesSASL says whether connections of the protocol authenticate with SASL.
func (p Protocol) UsesSASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Supported returns nil when a listener of the protocol can be started.
func (p Protocol) Supported() error {
	switch p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return nil
	}
	return fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT "+
		"or SASL_SSL)", string(p))
}

func parseProtocol(s string) (Protocol, error) {
	p := Protocol(strings.ToUpper(strings.TrimSpace(s)))
	switch p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SSL, "+
		"SASL_PLAINTEXT or SASL_SSL)", s)
}

// ListenerAddr is one entry of Kafka's listeners or advertised.listeners syntax,
// NAME://host:port. Host may be empty (every interface, as Kafka reads it).
type ListenerAddr struct {
	Name string
	Host string
	Port int
}

// Addr is host:port.
func (l ListenerAddr) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l ListenerAddr) String() string { return l.Name + "://" + l.Addr() }

// ParseListeners reads Kafka's "NAME://host:port,NAME://host:port". Names are upper
// case (Kafka's rule: listener names are case-sensitive and conventionally upper case;
// they are matched as given). A name may appear once.
func ParseListeners(value string) ([]ListenerAddr, error) {
	var out []ListenerAddr
	seen := map[string]bool{}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q: want NAME://host:port (for example "+
				"PLAINTEXT://127.0.0.1:9092)", item)
		}
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", item, err)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("listener %q: port must be 0-65535", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		out = append(out, ListenerAddr{Name: name, Host: host, Port: int(port)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no listener in %q", value)
	}
	return out, nil
}

// DefaultProtocolMap is listener.security.protocol.map's default: each protocol's name
// is a listener name of that protocol.
func DefaultProtocolMap() map[string]Protocol {
	return map[string]Protocol{"PLAINTEXT": Plaintext, "SSL": SSL,
		"SASL_PLAINTEXT": SASLPlaintext, "SASL_SSL": SASLSSL}
}

// ParseProtocolMap reads listener.security.protocol.map, "NAME:PROTOCOL,...". As in
// Kafka, the value replaces the default map.
func ParseProtocolMap(value string) (map[string]Protocol, error) {
	m := map[string]Protocol{}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, proto, ok := strings.Cut(item, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener.security.protocol.map: want NAME:PROTOCOL, "+
				"got %q", item)
		}
		p, err := parseProtocol(proto)
		if err != nil {
			return nil, fmt.Errorf("listener.security.protocol.map: %w", err)
		}
		m[strings.TrimSpace(name)] = p
	}
	return m, nil
}
