package main

// The listener settings of `sluice node` (docs/security.md): Kafka's listeners,
// advertised.listeners, listener.security.protocol.map, inter.broker.listener.name, the
// ssl.* settings and the SASL ones, also per listener as listener.name.<name>.ssl.* and
// listener.name.<name>.sasl.enabled.mechanisms.

import (
	"fmt"
	"strings"

	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/settings"
)

type listenerSettings struct {
	listeners   string                       // "": one PLAINTEXT listener from --listen
	advertised  string                       // "": from --advertise, or the listen addresses
	protocols   map[string]kafkanet.Protocol // nil: kafkanet.DefaultProtocolMap()
	interBroker string
	controller  string                 // controller.listener.names: the quorum's TLS
	ssl         kafkanet.TLSSettings   // the ssl.* settings of every SSL listener
	sasl        kafkanet.SASLSettings  // the SASL settings of every SASL listener
	perListener map[string][][2]string // lower-case name -> listener.name.<name>.*
}

// set applies one of the listener settings; known is false for other keys.
func (l *listenerSettings) set(key, value string) (known bool, err error) {
	switch key {
	case "listeners":
		if !strings.Contains(value, "://") { // host:port, as Sluice took before
			value = "PLAINTEXT://" + value
		}
		l.listeners = value
	case "advertised.listeners":
		if value != "" && !strings.Contains(value, "://") {
			value = "PLAINTEXT://" + value
		}
		l.advertised = value
	case "listener.security.protocol.map":
		l.protocols, err = kafkanet.ParseProtocolMap(value)
	case "inter.broker.listener.name":
		l.interBroker = strings.TrimSpace(value)
	case "controller.listener.names":
		l.controller = strings.TrimSpace(value)
	default:
		if known, err := l.sasl.Set(key, value); known {
			return true, err
		}
		return l.ssl.Set(key, value)
	}
	return true, err
}

// setPerListener applies listener.name.<name>.<ssl setting>; known is false for other
// keys.
func (l *listenerSettings) setPerListener(key, value string) (known bool, err error) {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return false, nil
	}
	name, setting, ok := strings.Cut(rest, ".")
	if !ok || name == "" {
		return true, fmt.Errorf("%s: want listener.name.<name>.<setting>", key)
	}
	if err := settings.CheckKnown(setting, value); err != nil {
		return true, fmt.Errorf("%s: %w", key, err)
	}
	var probe kafkanet.TLSSettings
	var saslProbe kafkanet.SASLSettings
	if setting == "sasl.enabled.mechanisms" {
		if _, err := saslProbe.Set(setting, value); err != nil {
			return true, err
		}
	} else if known, err := probe.Set(setting, value); !known {
		return true, fmt.Errorf("%s: only ssl.* settings and sasl.enabled.mechanisms "+
			"can be given per listener", key)
	} else if err != nil {
		return true, err
	}
	if l.perListener == nil {
		l.perListener = map[string][][2]string{}
	}
	name = strings.ToLower(name)
	l.perListener[name] = append(l.perListener[name], [2]string{setting, value})
	return true, nil
}

// build turns the settings into the node's listeners and its inter-broker listener's
// name. Without listeners, listen and advertise make one PLAINTEXT listener.
func (l *listenerSettings) build(listen, advertise string) ([]runtime.Listener, string,
	error) {
	value, adv := l.listeners, l.advertised
	if value == "" {
		value = "PLAINTEXT://" + listen
		if advertise != "" {
			adv = "PLAINTEXT://" + advertise
		}
	} else if advertise != "" {
		return nil, "", fmt.Errorf("--advertise goes with --listen; with listeners, " +
			"give advertised.listeners (--advertised-listeners)")
	}
	addrs, err := kafkanet.ParseListeners(value)
	if err != nil {
		return nil, "", fmt.Errorf("listeners: %w", err)
	}
	protocols := l.protocols
	if protocols == nil {
		protocols = kafkanet.DefaultProtocolMap()
	}
	var out []runtime.Listener
	for _, a := range addrs {
		p, ok := protocols[a.Name]
		if !ok {
			return nil, "", fmt.Errorf("listener %s has no security protocol: name it in "+
				"listener.security.protocol.map (for example %s:SSL)", a.Name, a.Name)
		}
		rl := runtime.Listener{Name: a.Name, Addr: a.Addr(), Protocol: p, TLS: l.ssl,
			SASL: l.sasl}
		for _, kv := range l.perListener[strings.ToLower(a.Name)] {
			if _, err := rl.SASL.Set(kv[0], kv[1]); err != nil {
				return nil, "", err
			}
			if _, err := rl.TLS.Set(kv[0], kv[1]); err != nil {
				return nil, "", err
			}
		}
		out = append(out, rl)
	}
	if err := setAdvertised(out, adv); err != nil {
		return nil, "", err
	}
	if l.interBroker != "" {
		found := false
		for _, rl := range out {
			found = found || rl.Name == l.interBroker
		}
		if !found {
			return nil, "", fmt.Errorf("inter.broker.listener.name %s is not one of the "+
				"listeners %s", l.interBroker, value)
		}
	}
	return out, l.interBroker, nil
}

func setAdvertised(ls []runtime.Listener, value string) error {
	if value == "" {
		return nil
	}
	addrs, err := kafkanet.ParseListeners(value)
	if err != nil {
		return fmt.Errorf("advertised.listeners: %w", err)
	}
	for _, a := range addrs {
		found := false
		for i := range ls {
			if ls[i].Name == a.Name {
				ls[i].Advertised, found = a.Addr(), true
			}
		}
		if !found {
			return fmt.Errorf("advertised.listeners: %s is not one of the listeners", a.Name)
		}
	}
	return nil
}

// controllerTLS is the quorum transport's TLS (nil: plaintext) from
// controller.listener.names: the one listener name it gives must have the protocol SSL
// (or PLAINTEXT, saying so explicitly) in listener.security.protocol.map, and the
// transport takes the ssl.* settings with that listener's listener.name.<name>.ssl.*
// over them. The name may be one of the Kafka listeners (the quorum then shares its
// certificates) or a name of its own, as Kafka's CONTROLLER; either way the transport
// listens on --controller-listen, never on a Kafka listener's address.
func (l *listenerSettings) controllerTLS() (*kafkanet.TLSSettings, error) {
	name := l.controller
	if name == "" {
		return nil, nil
	}
	if strings.Contains(name, ",") {
		return nil, fmt.Errorf("controller.listener.names %q: Sluice's quorum transport "+
			"takes one listener name", name)
	}
	protocols := l.protocols
	if protocols == nil {
		protocols = kafkanet.DefaultProtocolMap()
	}
	p, ok := protocols[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("controller.listener.names %s has no security protocol: "+
			"name it in listener.security.protocol.map (for example %s:SSL)", name, name)
	case p == kafkanet.Plaintext:
		return nil, nil
	case p != kafkanet.SSL:
		return nil, fmt.Errorf("controller.listener.names %s: the quorum transport speaks "+
			"PLAINTEXT or SSL (mutual TLS), not %s", name, p)
	}
	t := l.ssl
	for _, kv := range l.perListener[strings.ToLower(name)] {
		if _, err := t.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return &t, nil
}
