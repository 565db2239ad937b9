package acl

import "testing"

// Decisions where Sluice once differed from Kafka's StandardAuthorizer, and the rules
// the audit checked hold (docs/security.md "ACLs", "Where Sluice differs from Kafka").

// KIP-679 first decides the operation on a resource no binding names, as Kafka does:
// with allow.everyone.if.no.acl.found, an ACL on some other topic does not take an
// idempotent producer's WRITE "on some topic" away.
func TestAnyOfTypeDecidesAnUnnamedResourceFirst(t *testing.T) {
	carol := Who{Principal: "User:carol", Host: "10.0.0.3"}
	s := setOf(bind(ResourceTopic, PatternLiteral, "orders", "User:bob", OpWrite, Deny))
	a := &Authorizer{AllowIfNoACL: true}
	if !a.AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("allow.everyone.if.no.acl.found: a topic no ACL covers may be written")
	}
	if (&Authorizer{}).AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("without allow.everyone.if.no.acl.found carol has no WRITE anywhere")
	}
	s.Add(bind(ResourceTopic, PatternLiteral, Wildcard, "User:*", OpRead, Allow))
	if a.AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("a binding on the wildcard name covers every topic: no topic is uncovered")
	}
	s.Add(bind(ResourceTopic, PatternLiteral, Wildcard, "User:carol", OpWrite, Allow))
	if !a.AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("WRITE on the wildcard name is WRITE on some topic")
	}
	s.Add(bind(ResourceTopic, PatternPrefixed, Wildcard, "User:carol", OpWrite, Deny))
	if !a.AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("a PREFIXED * deny covers only names starting with *, not the wildcard allow")
	}
	s.Add(bind(ResourceTopic, PatternLiteral, Wildcard, "User:*", OpAll, Deny))
	if a.AuthorizeAnyOfType(s, carol, OpWrite, ResourceTopic) {
		t.Fatal("a deny on the wildcard name refuses every topic")
	}
}

// Kafka's only wildcard principal is User:*, and it covers principals of every type.
func TestWildcardPrincipalIsUserStar(t *testing.T) {
	a := &Authorizer{}
	s := setOf(bind(ResourceTopic, PatternLiteral, "t", "User:*", OpRead, Allow))
	if !a.Authorize(s, Who{Principal: "Group:ops"}, OpRead, ResourceTopic, "t") {
		t.Fatal("User:* applies to a principal of another type too")
	}
	s = setOf(bind(ResourceTopic, PatternLiteral, "t", "Group:*", OpRead, Allow))
	if a.Authorize(s, Who{Principal: "Group:ops"}, OpRead, ResourceTopic, "t") {
		t.Fatal("Group:* is the principal named *, not a wildcard")
	}
	if !a.Authorize(s, Who{Principal: "Group:*"}, OpRead, ResourceTopic, "t") {
		t.Fatal("Group:* is a principal like any other")
	}
}

// A binding's host matches the client's address however the address is written: Kafka
// prints an IPv6 client uncompressed, Go compressed.
func TestHostMatchesAnAddressHoweverWritten(t *testing.T) {
	a := &Authorizer{}
	cases := []struct {
		host, client string
		want         bool
	}{
		{"0:0:0:0:0:0:0:1", "::1", true}, // an ACL written for Kafka
		{"::1", "::1", true},
		{"fe80:0:0:0:0:0:0:1", "fe80::1", true},
		{"::ffff:10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"::2", "::1", false},
		{"localhost", "127.0.0.1", false}, // names are not resolved, as in Kafka
		{"10.0.0.1", "", false},
	}
	for _, c := range cases {
		b := bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpRead, Allow)
		b.Host = c.host
		s := setOf(b)
		who := Who{Principal: "User:alice", Host: c.client}
		if got := a.Authorize(s, who, OpRead, ResourceTopic, "t"); got != c.want {
			t.Errorf("host %q, client %q: %v, want %v", c.host, c.client, got, c.want)
		}
	}
}

// The cluster resource is named kafka-cluster; Kafka checks the name only, so a
// PREFIXED kafka-cluster is stored, and covers the cluster alone.
func TestClusterBindingName(t *testing.T) {
	ok := bind(ResourceCluster, PatternPrefixed, ClusterName, "User:alice", OpAlter, Allow)
	if err := ok.Check(); err != nil {
		t.Fatalf("PREFIXED kafka-cluster: %v", err)
	}
	for _, name := range []string{"kafka", Wildcard, "other"} {
		for _, pat := range []PatternType{PatternLiteral, PatternPrefixed} {
			if bind(ResourceCluster, pat, name, "User:a", OpAlter, Allow).Check() == nil {
				t.Errorf("cluster %v %q must be refused", pat, name)
			}
		}
	}
	if !(&Authorizer{}).Authorize(setOf(ok), alice, OpAlter, ResourceCluster, ClusterName) {
		t.Fatal("a PREFIXED kafka-cluster allow covers the cluster")
	}
}

// Rules the audit found as Kafka has them, kept so: implication is for ALLOW only, a
// DENY of ALL refuses every operation, any binding on a resource (a deny, another
// principal's, a prefix) counts as "an ACL found", and a PREFIXED * is not a wildcard.
func TestKafkaRulesHold(t *testing.T) {
	a := &Authorizer{}
	s := setOf(
		bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpAll, Allow),
		bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpWrite, Deny),
		bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpAlterConfigs, Deny),
	)
	if !a.Authorize(s, alice, OpDescribe, ResourceTopic, "t") ||
		!a.Authorize(s, alice, OpDescribeConfigs, ResourceTopic, "t") {
		t.Fatal("a deny of WRITE (ALTER_CONFIGS) does not deny the DESCRIBE it implies")
	}
	if a.Authorize(s, alice, OpWrite, ResourceTopic, "t") ||
		!a.Authorize(s, alice, OpRead, ResourceTopic, "t") {
		t.Fatal("the deny refuses its own operation only")
	}
	s.Add(bind(ResourceTopic, PatternLiteral, "t", "User:*", OpAll, Deny))
	if a.Authorize(s, alice, OpDescribe, ResourceTopic, "t") {
		t.Fatal("DENY ALL for User:* refuses alice everything")
	}

	a.AllowIfNoACL = true
	s = setOf(bind(ResourceTopic, PatternPrefixed, "ord", "User:bob", OpRead, Allow))
	if a.Authorize(s, alice, OpRead, ResourceTopic, "orders") {
		t.Fatal("bob's prefixed ACL covers orders: not allowed to everyone")
	}
	if !a.Authorize(s, alice, OpRead, ResourceTopic, "other") {
		t.Fatal("other has no ACL: allowed to everyone")
	}

	a.AllowIfNoACL = false
	s = setOf(bind(ResourceTopic, PatternPrefixed, Wildcard, "User:*", OpRead, Allow))
	if a.Authorize(s, alice, OpRead, ResourceTopic, "orders") {
		t.Fatal("a PREFIXED * covers only names starting with *")
	}
	if !a.Authorize(s, alice, OpRead, ResourceTopic, "*x") {
		t.Fatal("a PREFIXED * covers *x")
	}
}
