package acl

import "testing"

func bind(t ResourceType, pat PatternType, name, principal string, op Operation,
	perm Permission) Binding {
	return Binding{Type: t, Name: name, Pattern: pat, Principal: principal, Host: Wildcard,
		Operation: op, Permission: perm}
}

var (
	alice = Who{Principal: "User:alice", Host: "10.0.0.1"}
	bob   = Who{Principal: "User:bob", Host: "10.0.0.2"}
)

func setOf(bs ...Binding) *Set {
	s := NewSet()
	for _, b := range bs {
		if err := b.Check(); err != nil {
			panic(err)
		}
		s.Add(b)
	}
	return s
}

func TestAuthorizeLiteralPrefixedAndWildcard(t *testing.T) {
	s := setOf(
		bind(ResourceTopic, PatternLiteral, "orders", "User:alice", OpRead, Allow),
		bind(ResourceTopic, PatternPrefixed, "logs-", "User:alice", OpWrite, Allow),
		bind(ResourceTopic, PatternLiteral, Wildcard, "User:*", OpDescribe, Allow),
	)
	a := &Authorizer{}
	cases := []struct {
		who  Who
		op   Operation
		name string
		want bool
	}{
		{alice, OpRead, "orders", true},
		{alice, OpWrite, "orders", false},
		{bob, OpRead, "orders", false},
		{alice, OpWrite, "logs-app", true},
		{alice, OpWrite, "logs", false},       // shorter than the prefix
		{alice, OpWrite, "xlogs-app", false},  // prefix, not substring
		{bob, OpDescribe, "anything", true},   // User:* on the wildcard name
		{Who{}, OpDescribe, "anything", true}, // anonymous is a User too
		{bob, OpRead, "anything", false},
	}
	for _, c := range cases {
		if got := a.Authorize(s, c.who, c.op, ResourceTopic, c.name); got != c.want {
			t.Errorf("%v %v %q = %v, want %v", c.who, c.op, c.name, got, c.want)
		}
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	s := setOf(
		bind(ResourceTopic, PatternLiteral, Wildcard, "User:alice", OpAll, Allow),
		bind(ResourceTopic, PatternPrefixed, "secret-", "User:alice", OpRead, Deny),
		bind(ResourceTopic, PatternLiteral, "payroll", "User:*", OpAll, Deny),
	)
	a := &Authorizer{}
	if !a.Authorize(s, alice, OpRead, ResourceTopic, "public") {
		t.Fatal("ALL on the wildcard should allow READ")
	}
	if a.Authorize(s, alice, OpRead, ResourceTopic, "secret-plans") {
		t.Fatal("a prefixed deny must win over a wildcard allow")
	}
	if !a.Authorize(s, alice, OpWrite, ResourceTopic, "secret-plans") {
		t.Fatal("a READ deny must not deny WRITE")
	}
	if a.Authorize(s, alice, OpDescribe, ResourceTopic, "payroll") {
		t.Fatal("a deny of ALL denies every operation")
	}
}

func TestImpliedOperations(t *testing.T) {
	a := &Authorizer{}
	for _, op := range []Operation{OpRead, OpWrite, OpDelete, OpAlter} {
		s := setOf(bind(ResourceTopic, PatternLiteral, "t", "User:alice", op, Allow))
		if !a.Authorize(s, alice, OpDescribe, ResourceTopic, "t") {
			t.Errorf("%v should imply DESCRIBE", op)
		}
	}
	for _, op := range []Operation{OpCreate, OpDescribeConfigs, OpIdempotentWrite} {
		s := setOf(bind(ResourceTopic, PatternLiteral, "t", "User:alice", op, Allow))
		if a.Authorize(s, alice, OpDescribe, ResourceTopic, "t") {
			t.Errorf("%v must not imply DESCRIBE", op)
		}
	}
	s := setOf(bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpAlterConfigs, Allow))
	if !a.Authorize(s, alice, OpDescribeConfigs, ResourceTopic, "t") {
		t.Error("ALTER_CONFIGS should imply DESCRIBE_CONFIGS")
	}
	if a.Authorize(s, alice, OpAlter, ResourceTopic, "t") {
		t.Error("ALTER_CONFIGS must not imply ALTER")
	}
	// An implied DESCRIBE does not survive an explicit deny of DESCRIBE.
	s.Add(bind(ResourceTopic, PatternLiteral, "t", "User:alice", OpDescribeConfigs, Deny))
	if a.Authorize(s, alice, OpDescribeConfigs, ResourceTopic, "t") {
		t.Error("an explicit deny must win over an implied allow")
	}
}

func TestSuperUsersNoACLAndHosts(t *testing.T) {
	s := setOf(bind(ResourceTopic, PatternLiteral, "t", "User:bob", OpAll, Deny))
	a := &Authorizer{SuperUsers: map[string]bool{"User:bob": true}}
	if !a.Authorize(s, bob, OpRead, ResourceTopic, "t") {
		t.Fatal("a super user passes even a deny")
	}
	if a.Authorize(s, alice, OpRead, ResourceTopic, "other") {
		t.Fatal("no ACL and allow.everyone.if.no.acl.found=false must refuse")
	}
	a.AllowIfNoACL = true
	if !a.Authorize(s, alice, OpRead, ResourceTopic, "other") {
		t.Fatal("no ACL and allow.everyone.if.no.acl.found=true must allow")
	}
	if a.Authorize(s, alice, OpRead, ResourceTopic, "t") {
		t.Fatal("a resource with ACLs (for others) is not allowed by AllowIfNoACL")
	}
	h := bind(ResourceGroup, PatternLiteral, "g", "User:alice", OpRead, Allow)
	h.Host = "10.0.0.1"
	s.Add(h)
	if !a.Authorize(s, alice, OpRead, ResourceGroup, "g") {
		t.Fatal("allowed from its host")
	}
	if a.Authorize(s, Who{Principal: "User:alice", Host: "10.9.9.9"}, OpRead, ResourceGroup,
		"g") {
		t.Fatal("refused from another host")
	}
}

func TestImplicitClusterAction(t *testing.T) {
	a := &Authorizer{Implicit: map[string][]Operation{"User:broker": {OpClusterAction}}}
	s := NewSet()
	b := Who{Principal: "User:broker"}
	if !a.Authorize(s, b, OpClusterAction, ResourceCluster, ClusterName) {
		t.Fatal("the inter-broker principal has CLUSTER_ACTION")
	}
	if a.Authorize(s, b, OpAlter, ResourceCluster, ClusterName) {
		t.Fatal("and nothing else")
	}
}

func TestAuthorizeAnyOfType(t *testing.T) {
	a := &Authorizer{}
	s := setOf(bind(ResourceTopic, PatternPrefixed, "app-", "User:alice", OpWrite, Allow))
	if !a.AuthorizeAnyOfType(s, alice, OpWrite, ResourceTopic) {
		t.Fatal("WRITE on a prefix is WRITE on some topic")
	}
	if a.AuthorizeAnyOfType(s, bob, OpWrite, ResourceTopic) {
		t.Fatal("bob has no WRITE")
	}
	s.Add(bind(ResourceTopic, PatternPrefixed, "app", "User:alice", OpWrite, Deny))
	if a.AuthorizeAnyOfType(s, alice, OpWrite, ResourceTopic) {
		t.Fatal("a deny on a shorter prefix cancels the allow")
	}
}

func TestFilterMatch(t *testing.T) {
	s := setOf(
		bind(ResourceTopic, PatternLiteral, "orders", "User:alice", OpRead, Allow),
		bind(ResourceTopic, PatternLiteral, Wildcard, "User:bob", OpRead, Allow),
		bind(ResourceTopic, PatternPrefixed, "ord", "User:bob", OpWrite, Deny),
		bind(ResourceTopic, PatternPrefixed, "x", "User:bob", OpWrite, Deny),
		bind(ResourceGroup, PatternLiteral, "orders", "User:alice", OpRead, Allow),
	)
	name := "orders"
	count := func(f Filter) int { return len(s.Select(f)) }
	base := Filter{Type: ResourceTopic, Name: &name, Operation: OpAny,
		Permission: PermissionAny}
	f := base
	f.Pattern = PatternMatch
	if got := count(f); got != 3 {
		t.Fatalf("MATCH orders: %d bindings, want 3 (literal, wildcard, prefix)", got)
	}
	f.Pattern = PatternLiteral
	if got := count(f); got != 1 {
		t.Fatalf("LITERAL orders: %d, want 1", got)
	}
	f.Pattern, f.Name = PatternAny, nil
	f.Type = ResourceAny
	if got := count(f); got != 5 {
		t.Fatalf("ANY: %d, want 5", got)
	}
	bobName := "User:bob"
	f.Principal = &bobName
	if got := count(f); got != 3 {
		t.Fatalf("ANY for bob: %d, want 3", got)
	}
	if (Filter{Type: ResourceUnknown, Pattern: PatternAny, Operation: OpAny,
		Permission: PermissionAny}).Check() == nil {
		t.Fatal("an UNKNOWN resource type is not a valid filter")
	}
}

func TestSetRemoveAndCheck(t *testing.T) {
	b := bind(ResourceTopic, PatternPrefixed, "p", "User:alice", OpRead, Allow)
	s := setOf(b)
	if !s.Remove(b) || s.Remove(b) || s.Len() != 0 || len(s.Matching(ResourceTopic, "pq")) != 0 {
		t.Fatal("Remove should remove once and leave nothing matching")
	}
	bad := []Binding{
		bind(ResourceAny, PatternLiteral, "t", "User:a", OpRead, Allow),
		bind(ResourceTopic, PatternMatch, "t", "User:a", OpRead, Allow),
		bind(ResourceTopic, PatternLiteral, "t", "alice", OpRead, Allow),
		bind(ResourceTopic, PatternLiteral, "t", "User:a", OpAny, Allow),
		bind(ResourceCluster, PatternLiteral, "c", "User:a", OpAlter, Allow),
	}
	for _, x := range bad {
		if x.Check() == nil {
			t.Errorf("%v should not be storable", x)
		}
	}
	if op, err := ParseOperation("describe-configs"); err != nil || op != OpDescribeConfigs {
		t.Fatalf("ParseOperation = %v, %v", op, err)
	}
}
