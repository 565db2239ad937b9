package broker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/meta"
)

// fwdPair is a quorum of three brokers seen from two nodes: fwd (node 2, which does not
// lead) and ctl (node 1, the active controller). Each has its own copy of the log; the
// test carries fwd's Envelopes to ctl and ctl's answers back. Both run the authorizer
// (withAuthz: the ACL APIs need one), with admin and the anonymous peer super users.
type fwdPair struct {
	t        *testing.T
	fwd, ctl *quorumHarness
}

func newFwdPair(t *testing.T, fwdOpts ...func(*Config)) *fwdPair {
	ctl := newQuorumHarness(t, 1, 3, withAuthz)
	fwd := newQuorumHarness(t, 1, 3, append([]func(*Config){withAuthz, func(c *Config) {
		c.NodeID = 2
	}}, fwdOpts...)...)
	return &fwdPair{t: t, fwd: fwd, ctl: ctl}
}

// send has fwd take req from principal and returns its request id and the one
// Envelope fwd sent to node 1, requiring that fwd did not answer.
func (p *fwdPair) send(principal string, req kmsg.Request) (uint64, PeerRequest) {
	p.t.Helper()
	id, answered := p.fwd.sendAs(7, principal, "admin-cli", req)
	require.False(p.t, answered, "answered before the controller's node did")
	peers := p.fwd.takePeers()
	require.Len(p.t, peers, 1)
	require.Equal(p.t, int32(1), peers[0].Node)
	_, ok := peers[0].Msg.(*kmsg.EnvelopeRequest)
	require.True(p.t, ok, "forwarded as %T", peers[0].Msg)
	return id, peers[0]
}

// carry delivers an Envelope to ctl as the peer's connection and returns ctl's answer.
func (p *fwdPair) carry(env PeerRequest) *kmsg.EnvelopeResponse {
	p.t.Helper()
	id, ok := p.ctl.sendAs(99, "User:ANONYMOUS", "sluice-node-2", env.Msg)
	require.True(p.t, ok, "the controller's node did not answer the Envelope")
	return roundTripResponse(p.t, p.ctl.env.replies[id].Msg).(*kmsg.EnvelopeResponse)
}

// answer steps ctl's answer into fwd and returns what fwd answered its client.
func (p *fwdPair) answer(id uint64, env PeerRequest, resp kmsg.Response, err error) kmsg.Response {
	p.t.Helper()
	p.fwd.step(PeerReply{Node: 1, ID: env.ID, Msg: resp, Err: err})
	p.fwd.settle()
	r, ok := p.fwd.reply(id)
	require.True(p.t, ok, "the forwarding node did not answer")
	return r
}

// roundTrip forwards req from principal through ctl and returns the client's answer.
func (p *fwdPair) roundTrip(principal string, req kmsg.Request) kmsg.Response {
	p.t.Helper()
	id, env := p.send(principal, req)
	resp := p.carry(env)
	requireCode(p.t, nil, resp.ErrorCode)
	return p.answer(id, env, resp, nil)
}

// Each admin change sent to a node that does not lead the quorum is forwarded to the
// controller's node, runs there, and is answered once its record committed there; the
// forwarding node proposes nothing itself.
func TestForwardedAdminChangesCommitOnTheController(t *testing.T) {
	p := newFwdPair(t)
	requireCode(t, nil, p.ctl.createTopics(ctTopic("t", 1, -1)).Topics[0].ErrorCode)
	before := len(p.fwd.env.committed)

	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Version = maxVersion(kmsg.CreateACLs)
	ca.Creations = []kmsg.CreateACLsRequestCreation{creation(acl.ResourceTopic, "t",
		acl.PatternLiteral, bob, acl.OpRead, acl.Allow)}
	cr := p.roundTrip(admin, ca).(*kmsg.CreateACLsResponse)
	require.Len(t, cr.Results, 1)
	requireCode(t, nil, cr.Results[0].ErrorCode)
	require.Len(t, p.ctl.describeACLs(admin, nil).Resources, 1, "committed on the controller")
	require.Empty(t, p.fwd.describeACLs(admin, nil).Resources,
		"the forwarding node lists it once it applies the record")

	qr := p.roundTrip(admin, &kmsg.AlterClientQuotasRequest{Version: 1,
		Entries: []kmsg.AlterClientQuotasRequestEntry{quotaEntry([]string{"user", "bob"},
			quotaSet{key: "producer_byte_rate", value: 1024})}}).(*kmsg.AlterClientQuotasResponse)
	require.Len(t, qr.Entries, 1)
	requireCode(t, nil, qr.Entries[0].ErrorCode)
	v, ok := p.ctl.b.image.Quota(meta.QuotaEntity{User: meta.QuotaName{Set: true, Name: "bob"}},
		"producer_byte_rate")
	require.True(t, ok)
	require.Equal(t, 1024.0, v)

	sr := p.roundTrip(admin, &kmsg.AlterUserSCRAMCredentialsRequest{
		Upsertions: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("bob", 1, 4096)},
	}).(*kmsg.AlterUserSCRAMCredentialsResponse)
	require.Len(t, sr.Results, 1)
	requireCode(t, nil, sr.Results[0].ErrorCode)
	_, ok = p.ctl.b.image.ScramCredential("bob", meta.ScramMechanism(1))
	require.True(t, ok)

	ir := p.roundTrip(admin, incReq(1, false, incRes("t", set("retention.ms", "1234")))).(*kmsg.IncrementalAlterConfigsResponse)
	require.Len(t, ir.Resources, 1)
	requireCode(t, nil, ir.Resources[0].ErrorCode, deref(ir.Resources[0].ErrorMessage))
	require.Equal(t, "1234", deref(p.ctl.describeTopic("t")["retention.ms"].Value))

	ar := p.roundTrip(admin, alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "t",
		"retention.ms", "999"))).(*kmsg.AlterConfigsResponse)
	require.Len(t, ar.Resources, 1)
	requireCode(t, nil, ar.Resources[0].ErrorCode, deref(ar.Resources[0].ErrorMessage))
	require.Equal(t, "999", deref(p.ctl.describeTopic("t")["retention.ms"].Value))

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	del.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
	dr := p.roundTrip(admin, del).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results, 1)
	requireCode(t, nil, dr.Results[0].ErrorCode)
	require.Len(t, dr.Results[0].MatchingACLs, 1)
	require.Empty(t, p.ctl.describeACLs(admin, nil).Resources)

	require.Len(t, p.fwd.env.committed, before, "the forwarding node proposed nothing")
}

// The Envelope's answer comes only once the change committed: while the controller's
// proposal is outstanding neither node answers, and a proposal that does not commit
// (the leadership moved) comes back as a retriable error, never a success.
func TestForwardedChangeAnsweredOnlyAfterCommit(t *testing.T) {
	p := newFwdPair(t)
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Version = maxVersion(kmsg.CreateACLs)
	ca.Creations = []kmsg.CreateACLsRequestCreation{creation(acl.ResourceTopic, "t",
		acl.PatternLiteral, bob, acl.OpRead, acl.Allow)}
	id, env := p.send(admin, ca)

	p.ctl.holdMeta = true
	eid, ok := p.ctl.sendAs(99, "User:ANONYMOUS", "sluice-node-2", env.Msg)
	require.False(t, ok, "the Envelope was answered before its record committed")
	require.Len(t, p.ctl.env.proposals, 1)
	p.ctl.env.metaErr = errors.New("not the leader any more")
	p.ctl.holdMeta = false
	p.ctl.settle()
	resp := roundTripResponse(t, p.ctl.env.replies[eid].Msg).(*kmsg.EnvelopeResponse)
	requireCode(t, nil, resp.ErrorCode)
	cr := p.answer(id, env, resp, nil).(*kmsg.CreateACLsResponse)
	require.Len(t, cr.Results, 1)
	require.Contains(t, []int16{kerr.RequestTimedOut.Code, kerr.NotController.Code},
		cr.Results[0].ErrorCode)
	require.Empty(t, p.ctl.describeACLs(admin, nil).Resources)
}

// The controller moved before the Envelope arrived (its node answers NOT_CONTROLLER),
// or the Envelope was not answered: the client gets NOT_CONTROLLER or
// REQUEST_TIMED_OUT for every item.
func TestForwardedChangeFailsRetriablyWhenTheControllerMoves(t *testing.T) {
	p := newFwdPair(t)
	q := &kmsg.AlterClientQuotasRequest{Version: 1,
		Entries: []kmsg.AlterClientQuotasRequestEntry{
			quotaEntry([]string{"user", "bob"}, quotaSet{key: "producer_byte_rate", value: 1}),
			quotaEntry([]string{"user", "eve"}, quotaSet{key: "producer_byte_rate", value: 2})}}
	id, env := p.send(admin, q)
	// Node 2 leads nothing: it answers an Envelope NOT_CONTROLLER.
	eid, ok := p.fwd.sendAs(98, "User:ANONYMOUS", "sluice-node-3", env.Msg)
	require.True(t, ok)
	nc := roundTripResponse(t, p.fwd.env.replies[eid].Msg).(*kmsg.EnvelopeResponse)
	requireCode(t, kerr.NotController, nc.ErrorCode)
	require.Empty(t, p.fwd.takePeers(), "an Envelope is never forwarded again")
	qr := p.answer(id, env, nc, nil).(*kmsg.AlterClientQuotasResponse)
	require.Len(t, qr.Entries, 2)
	for _, e := range qr.Entries {
		requireCode(t, kerr.NotController, e.ErrorCode)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	del.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
	id, env = p.send(admin, del)
	dr := p.answer(id, env, nil, errors.New("peer link down")).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results, 1)
	requireCode(t, kerr.RequestTimedOut, dr.Results[0].ErrorCode)

	// No leader known: answered NOT_CONTROLLER at once, nothing sent.
	p.fwd.step(MetaLeaderChanged{Leader: -1, Epoch: 2})
	id2, ok := p.fwd.sendAs(7, admin, "admin-cli", incReq(1, false, incRes("t",
		set("retention.ms", "1"))))
	require.True(t, ok)
	require.Empty(t, p.fwd.takePeers())
	ir := p.fwd.env.replies[id2].Msg.(*kmsg.IncrementalAlterConfigsResponse)
	requireCode(t, kerr.NotController, ir.Resources[0].ErrorCode)
}

// The receiving node authorizes the client: a refused client is answered there and
// nothing is forwarded. The controller's node takes an Envelope only from a principal
// with CLUSTER_ACTION (the inter-broker one), and runs what it carries without
// checking the client again.
func TestForwardAuthorization(t *testing.T) {
	peer := "User:node"
	p := newFwdPair(t)
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Version = maxVersion(kmsg.CreateACLs)
	ca.Creations = []kmsg.CreateACLsRequestCreation{creation(acl.ResourceTopic, "t",
		acl.PatternLiteral, bob, acl.OpRead, acl.Allow)}
	id, ok := p.fwd.sendAs(7, bob, "c", ca)
	require.True(t, ok)
	require.Empty(t, p.fwd.takePeers(), "a refused request is not forwarded")
	requireCode(t, kerr.ClusterAuthorizationFailed,
		p.fwd.env.replies[id].Msg.(*kmsg.CreateACLsResponse).Results[0].ErrorCode)

	ctl := newQuorumHarness(t, 1, 3, func(c *Config) {
		withAuthz(c)
		c.Authz.SuperUsers = []string{admin}
		c.Authz.InterBrokerPrincipal = peer
	})
	id, env := p.send(admin, ca)
	eid, ok := ctl.sendAs(99, bob, "not-a-peer", env.Msg)
	require.True(t, ok)
	requireCode(t, kerr.ClusterAuthorizationFailed,
		ctl.env.replies[eid].Msg.(*kmsg.EnvelopeResponse).ErrorCode)
	require.Empty(t, ctl.describeACLs(admin, nil).Resources)

	eid, ok = ctl.sendAs(99, peer, "sluice-node-2", env.Msg)
	require.True(t, ok)
	resp := roundTripResponse(t, ctl.env.replies[eid].Msg).(*kmsg.EnvelopeResponse)
	requireCode(t, nil, resp.ErrorCode)
	cr := p.answer(id, env, resp, nil).(*kmsg.CreateACLsResponse)
	requireCode(t, nil, cr.Results[0].ErrorCode)
	require.Len(t, ctl.describeACLs(admin, nil).Resources, 1)
}

// Forwarded changes leave one at a time, in arrival order, as the node's own admin
// operations run.
func TestForwardedChangesKeepTheirOrder(t *testing.T) {
	p := newFwdPair(t)
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Version = maxVersion(kmsg.CreateACLs)
	ca.Creations = []kmsg.CreateACLsRequestCreation{creation(acl.ResourceTopic, "t",
		acl.PatternLiteral, bob, acl.OpRead, acl.Allow)}
	id1, env1 := p.send(admin, ca)
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	del.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
	id2, ok := p.fwd.sendAs(7, admin, "admin-cli", del)
	require.False(t, ok)
	require.Empty(t, p.fwd.takePeers(), "the second waits for the first")
	require.NotEmpty(t, p.fwd.b.Pending())

	p.answer(id1, env1, p.carry(env1), nil)
	peers := p.fwd.takePeers()
	require.Len(t, peers, 1)
	dr := p.answer(id2, peers[0], p.carry(peers[0]), nil).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results[0].MatchingACLs, 1, "the deletion ran after the creation")
}

// Items the receiving node refuses are answered there; only the rest travels, and the
// client gets both in one answer.
func TestForwardCarriesOnlyTheAuthorizedItems(t *testing.T) {
	p := newFwdPair(t)
	requireCode(t, nil, p.ctl.createTopics(ctTopic("mine", 1, -1)).Topics[0].ErrorCode)
	p.fwd.commitMeta(meta.Record{Kind: meta.KindACLsCreated, ACLs: []acl.Binding{{
		Type: acl.ResourceTopic, Name: "mine", Pattern: acl.PatternLiteral, Principal: bob,
		Host: "*", Operation: acl.OpAlterConfigs, Permission: acl.Allow}}})
	id, env := p.send(bob, incReq(1, false, incRes("theirs", set("retention.ms", "5")),
		incRes("mine", set("retention.ms", "7"))))
	inner, _, err := decodeEnvelopeRequest(env.Msg.(*kmsg.EnvelopeRequest).RequestData)
	require.NoError(t, err)
	fwdReq := inner.(*kmsg.IncrementalAlterConfigsRequest)
	require.Len(t, fwdReq.Resources, 1)
	require.Equal(t, "mine", fwdReq.Resources[0].ResourceName)
	require.Equal(t, bob, string(env.Msg.(*kmsg.EnvelopeRequest).RequestPrincipal))

	ir := p.answer(id, env, p.carry(env), nil).(*kmsg.IncrementalAlterConfigsResponse)
	codes := map[string]int16{}
	for _, r := range ir.Resources {
		codes[r.ResourceName] = r.ErrorCode
	}
	require.Equal(t, map[string]int16{"mine": 0,
		"theirs": kerr.TopicAuthorizationFailed.Code}, codes)
	require.Equal(t, "7", deref(p.ctl.describeTopic("mine")["retention.ms"].Value))
}
