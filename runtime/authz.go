package runtime

import (
	"crypto/tls"
	"crypto/x509"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/acl"
	kafkanet "github.com/sluicemq/sluice/net"
)

// interBrokerPrincipal is the principal this node's peers reach it with, which the
// authorizer lets do the inter-broker actions (broker.AuthzConfig): User:ANONYMOUS on a
// PLAINTEXT inter-broker listener, the inter-broker user on a SASL one, the subject of
// the node's own certificate on an SSL one (every node of a cluster is expected to share
// the listener's settings). "" when it cannot be known: the operator then lists the
// peers' principal in super.users.
func (o *Options) interBrokerPrincipal(lg *zap.Logger) string {
	l, err := o.interBroker()
	if err != nil {
		return ""
	}
	switch {
	case l.Protocol.UsesSASL():
		if l.SASL.InterBrokerUser == "" {
			return ""
		}
		return "User:" + l.SASL.InterBrokerUser
	case l.Protocol.UsesTLS():
		cfg, err := l.TLS.ClientConfig(lg)
		if err != nil {
			return ""
		}
		return ownPrincipal(cfg)
	default:
		return acl.Anonymous
	}
}

// configureAuthz completes the authorizer's settings before the broker is built, and
// warns when a listener authenticates clients but nothing checks what they may do.
func (n *Node) configureAuthz() {
	cfg := &n.opts.Config.Authz
	authenticates := false
	for _, l := range n.opts.Listeners {
		authenticates = authenticates || l.Protocol.UsesSASL() ||
			(l.Protocol.UsesTLS() && l.TLS.ClientAuth == "required")
	}
	if !cfg.Enabled {
		if authenticates {
			n.lg.Warn("a listener authenticates clients but no authorizer is configured: " +
				"every principal may do everything (set authorizer.class.name to check ACLs)")
		}
		return
	}
	// A node alone has no peers: nobody needs the inter-broker grants.
	if cfg.InterBrokerPrincipal == "" && (len(n.opts.Voters) > 1 || len(n.opts.Peers) > 0) {
		cfg.InterBrokerPrincipal = n.opts.interBrokerPrincipal(n.lg)
	}
	n.lg.Info("authorizer on", zap.String("authorizer.class.name", cfg.ClassName),
		zap.Strings("super.users", cfg.SuperUsers),
		zap.Bool("allow.everyone.if.no.acl.found", cfg.AllowIfNoACL),
		zap.String("inter_broker_principal", cfg.InterBrokerPrincipal))
}

// ownPrincipal is the principal of the certificate cli presents ("" when none).
func ownPrincipal(cli *tls.Config) string {
	var c *tls.Certificate
	switch {
	case cli.GetClientCertificate != nil:
		c, _ = cli.GetClientCertificate(&tls.CertificateRequestInfo{})
	case len(cli.Certificates) > 0:
		c = &cli.Certificates[0]
	}
	if c == nil || len(c.Certificate) == 0 {
		return ""
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return ""
	}
	return kafkanet.PrincipalOf(leaf)
}
