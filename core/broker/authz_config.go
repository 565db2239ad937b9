package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/acl"
)

// AuthzConfig holds the authorizer's settings (authorize.go, docs/security.md "ACLs").
type AuthzConfig struct {
	// Enabled is authorizer.class.name set to an authorizer: requests are checked
	// against the ACLs. Off (Kafka's default too), every request is allowed.
	Enabled bool
	// ClassName is the value authorizer.class.name was given.
	ClassName string
	// SuperUsers is super.users: principals that pass every check.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found: a resource no ACL covers is
	// allowed to everyone (Kafka's default: false).
	AllowIfNoACL bool
	// InterBrokerPrincipal is the principal this node's peers connect with (set by the
	// node from its inter-broker listener, not a setting): it may do the cluster's
	// inter-broker actions whatever the ACLs say: CLUSTER_ACTION (follower fetches) and
	// CREATE (topic creations forwarded to the controller's node).
	InterBrokerPrincipal string
}

// AuthorizerClassNames are the values of authorizer.class.name that turn the
// authorizer on: Kafka's two (KRaft's and ZooKeeper's) and a short one.
var AuthorizerClassNames = []string{"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"kafka.security.authorizer.AclAuthorizer", "sluice"}

var authzSettingNames = []string{"authorizer.class.name", "super.users",
	"allow.everyone.if.no.acl.found"}

func (c *AuthzConfig) set(name, value string) (bool, error) {
	var err error
	switch name {
	case "authorizer.class.name":
		v := strings.TrimSpace(value)
		c.ClassName, c.Enabled = v, v != ""
		if v != "" && !contains(AuthorizerClassNames, v) {
			err = fmt.Errorf("%s: %q is not one of %v (empty: no authorizer)", name, v,
				AuthorizerClassNames)
		}
	case "super.users":
		c.SuperUsers, err = parseSuperUsers(value)
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
	case "allow.everyone.if.no.acl.found":
		c.AllowIfNoACL, err = strconv.ParseBool(value)
		if err != nil {
			err = fmt.Errorf("%s: not true or false: %q", name, value)
		}
	default:
		return false, nil
	}
	return true, err
}

// parseSuperUsers parses "User:alice;User:bob" (blanks around names ignored).
func parseSuperUsers(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i := strings.IndexByte(p, ':'); i <= 0 || i == len(p)-1 {
			return nil, fmt.Errorf("%q is not a principal of the form User:name", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// authorizer builds the acl.Authorizer of the settings.
func (c AuthzConfig) authorizer() *acl.Authorizer {
	a := &acl.Authorizer{SuperUsers: map[string]bool{}, AllowIfNoACL: c.AllowIfNoACL,
		Implicit: map[string][]acl.Operation{}}
	for _, u := range c.SuperUsers {
		a.SuperUsers[u] = true
	}
	if c.InterBrokerPrincipal != "" {
		// Follower fetches, and the topic creations a peer forwards to the
		// controller's node (controller_port.go) after authorizing its client's.
		a.Implicit[c.InterBrokerPrincipal] = []acl.Operation{acl.OpClusterAction,
			acl.OpCreate}
	}
	return a
}
