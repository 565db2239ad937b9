package runtime

import (
	"crypto/tls"
	"fmt"
	stdnet "net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
	kafkanet "github.com/sluicemq/sluice/net"
)

// The node's named listeners (docs/security.md): each is bound by the one wire server,
// requests carry the listener's name, and the broker answers Metadata with the
// addresses of that listener. The inter-broker listener's advertised address is what
// the node registers as its own, the first of its registered listeners.

// interBroker is the listener peers use.
func (o *Options) interBroker() (*Listener, error) {
	for i := range o.Listeners {
		if o.Listeners[i].Name == o.InterBrokerListener {
			return &o.Listeners[i], nil
		}
	}
	return nil, fmt.Errorf("inter.broker.listener.name %q is not one of the listeners",
		o.InterBrokerListener)
}

// peerTLS is the TLS client config peers are reached with: nil unless the inter-broker
// listener speaks TLS.
func (o *Options) peerTLS(lg *zap.Logger) (*tls.Config, error) {
	l, err := o.interBroker()
	if err != nil || !l.Protocol.UsesTLS() {
		return nil, err
	}
	cfg, err := l.TLS.ClientConfig(lg)
	if err != nil {
		return nil, fmt.Errorf("listener %s (inter-broker): %w", l.Name, err)
	}
	return cfg, nil
}

// peerSASL is how peers are authenticated to: nil unless the inter-broker listener
// uses SASL. A node alone (no voters but itself, no peers) needs no credentials.
func (o *Options) peerSASL() (sasl.Mechanism, error) {
	l, err := o.interBroker()
	if err != nil || !l.Protocol.UsesSASL() {
		return nil, err
	}
	if len(o.Voters) <= 1 && len(o.Peers) == 0 && l.SASL.InterBrokerUser == "" {
		return nil, nil
	}
	m, err := l.SASL.ClientMechanism()
	if err != nil {
		return nil, fmt.Errorf("listener %s (inter-broker): %w", l.Name, err)
	}
	return m, nil
}

// netListeners checks the listeners and builds what the wire server binds.
func (n *Node) netListeners() ([]kafkanet.Listener, error) {
	if _, err := n.opts.interBroker(); err != nil {
		return nil, err
	}
	out := make([]kafkanet.Listener, 0, len(n.opts.Listeners))
	for _, l := range n.opts.Listeners {
		if err := l.Protocol.Supported(); err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		nl := kafkanet.Listener{Name: l.Name, Addr: l.Addr}
		if l.Protocol.UsesSASL() {
			cfg, err := l.SASL.ServerConfig(n.creds,
				n.lg.Named("sasl").With(zap.String("listener", l.Name)))
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.Name, err)
			}
			nl.SASL = cfg
		}
		if l.Protocol.UsesTLS() {
			cfg, err := l.TLS.ServerConfig(n.lg.Named("tls").With(zap.String("listener", l.Name)))
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.Name, err)
			}
			nl.TLS = cfg
		}
		out = append(out, nl)
	}
	return out, nil
}

// setAdvertised fills the broker's advertised listeners, each defaulting to the
// address actually listened on (which knows the real port when 0 was asked for); the
// inter-broker one is the broker's AdvertisedHost and AdvertisedPort.
func (n *Node) setAdvertised() error {
	var eps []meta.Endpoint
	for i := range n.opts.Listeners {
		l := &n.opts.Listeners[i]
		if l.Advertised == "" {
			l.Advertised = n.srv.ListenerAddr(l.Name)
		}
		host, port, err := advertisedHostPort(l.Name, l.Advertised)
		if err != nil {
			return err
		}
		eps = append(eps, meta.Endpoint{Name: l.Name, Host: host, Port: port})
	}
	ib, _ := n.opts.interBroker()
	i := slices.IndexFunc(eps, func(e meta.Endpoint) bool { return e.Name == ib.Name })
	eps[0], eps[i] = eps[i], eps[0] // the inter-broker listener first
	n.opts.AdvertisedAddr = ib.Advertised
	n.opts.Config.AdvertisedHost, n.opts.Config.AdvertisedPort = eps[0].Host, eps[0].Port
	n.opts.Config.Listeners = eps
	return nil
}

func advertisedHostPort(name, addr string) (string, int32, error) {
	host, portStr, err := stdnet.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("advertised address %q of listener %s: %w", addr, name, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("advertised address %q of listener %s: port must be "+
			"1-65535", addr, name)
	}
	if ip := stdnet.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", 0, fmt.Errorf("advertised address %q of listener %s: clients cannot "+
			"connect to an unspecified host; give --advertise (or advertised.listeners) "+
			"a reachable host name or address", addr, name)
	}
	return host, int32(port), nil
}

// registeredListeners are the listeners the node registers with the controller: none
// for one listener named PLAINTEXT (its registration is then exactly what it was
// before named listeners), else all of them, the inter-broker one first.
func (n *Node) registeredListeners() []meta.Endpoint {
	ls := n.opts.Config.Listeners
	if len(ls) == 1 && ls[0].Name == string(kafkanet.Plaintext) {
		return nil
	}
	return slices.Clone(ls)
}

// ListenerAddr is the address the named listener listens on ("" if none).
func (n *Node) ListenerAddr(name string) string { return n.srv.ListenerAddr(name) }

// clientAddr is the address of a plaintext listener, for in-process clients (the web
// console); the first listener when none is plaintext.
func (n *Node) clientAddr() string {
	for _, l := range n.opts.Listeners {
		if l.Protocol == kafkanet.Plaintext {
			return n.srv.ListenerAddr(l.Name)
		}
	}
	return n.srv.Addr()
}
