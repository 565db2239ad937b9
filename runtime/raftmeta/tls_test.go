package raftmeta

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/internal/devcert"
)

// transportTLS issues a node certificate (for 127.0.0.1) from ca and trusts trust.
func transportTLS(t *testing.T, ca, trust *devcert.CA) *TransportTLS {
	t.Helper()
	return transportTLSAs(t, "quorum node", ca, trust)
}

// transportTLSAs is transportTLS with the certificate's common name.
func transportTLSAs(t *testing.T, cn string, ca, trust *devcert.CA) *TransportTLS {
	t.Helper()
	p, err := ca.Issue(devcert.Leaf{CommonName: cn, Server: true})
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(trust.PEM))
	return &TransportTLS{
		Server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		Client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool,
			MinVersion: tls.VersionTLS12},
	}
}

// observed gives every node an observed logger (at Info and above) besides the test's.
func observed(c *testCluster) map[int32]*observer.ObservedLogs {
	logs := map[int32]*observer.ObservedLogs{}
	cores := map[int32]zapcore.Core{}
	for id := int32(1); id <= 9; id++ {
		cores[id], logs[id] = observer.New(zapcore.InfoLevel)
	}
	c.logOf = func(id int32) *zap.Logger {
		return zap.New(zapcore.NewTee(c.lg.Core(), cores[id])).With(zap.Int32("node", id))
	}
	return logs
}

func refusedLines(o *observer.ObservedLogs) int {
	return o.FilterMessageSnippet("refused a connection, its TLS handshake failed").Len()
}

func refusedPeerLines(o *observer.ObservedLogs) int {
	return o.FilterMessageSnippet("refused a peer whose certificate may not join").Len()
}

func proposeTopic(c *testCluster, on int, tok uint64) {
	c.nodes[on].m.Propose(meta.Record{Kind: meta.KindTopicCreated,
		Topic: fmt.Sprint("t", tok), Partitions: 1}, tok)
}

// TestQuorumOverTLS: three voters whose transport is TLS with client certificates
// from one CA elect a leader and commit on every node; a non-voter with a certificate
// from that CA joins over TLS and follows the log. A plaintext connection to the port
// (a join request, or raft's RPC bytes) gets no answer and changes nothing, with a
// refused-handshake line in the log.
func TestQuorumOverTLS(t *testing.T) {
	ca, err := devcert.NewCA("quorum CA", time.Hour)
	require.NoError(t, err)
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	c.tlsOf = func(int32) *TransportTLS { return transportTLS(t, ca, ca) }
	logs := observed(c)
	boxes := []*inbox{{}, {}, {}, {}}
	for i := 0; i < 3; i++ {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected over TLS")
	lead := c.leaderOf()
	proposeTopic(c, lead, 1)
	require.True(t, waitFor(settleBound, func() bool {
		a, ok := boxes[lead].answers()[1]
		return ok && a.Outcome == broker.MetaCommitted
	}), "not committed over TLS")
	for i := 0; i < 3; i++ {
		require.True(t, waitFor(settleBound, func() bool { return len(boxes[i].applied()) == 1 }),
			"node %d did not apply the record", c.nodes[i].id)
	}

	nv, err := c.addNonvoter()
	require.NoError(t, err)
	c.boot(nv, boxes[nv].deliver)
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[nv].applied()) == 1 }),
		"the non-voter did not join over TLS")
	require.Equal(t, raft.Nonvoter, c.suffrages(lead)[c.nodes[nv].id])

	// Plaintext: a join request and raft's AppendEntries type byte.
	before := refusedLines(logs[c.nodes[lead].id])
	quit := make(chan struct{})
	_, err = askJoin(c.nodes[lead].addr, joinRequest{ID: 9, Addr: "127.0.0.1:9"}, nil, quit)
	require.Error(t, err, "a plaintext join must get no answer")
	conn, err := net.DialTimeout("tcp", c.nodes[lead].addr, time.Second)
	require.NoError(t, err)
	_ = conn.SetDeadline(time.Now().Add(settleBound))
	_, _ = conn.Write([]byte{0, 0x81, 0xa4, 'T', 'e', 'r', 'm', 1})
	_, err = bufio.NewReader(conn).ReadByte()
	require.Error(t, err, "a plaintext raft RPC must get no answer")
	_ = conn.Close()
	require.NotContains(t, c.suffrages(lead), int32(9))
	require.True(t, waitFor(settleBound, func() bool {
		return refusedLines(logs[c.nodes[lead].id]) > before
	}), "no refused-handshake line on the leader")
}

// TestQuorumRefusesAnotherCAsPeer: voter 3 and a would-be non-voter hold certificates
// from another CA (and trust the quorum's, so the refusal is the quorum's verification
// of their client certificate). Voters 1 and 2 elect and commit without them; voter 3
// never learns a record nor leads, the non-voter is never added, and the voters log
// the refused handshakes.
func TestQuorumRefusesAnotherCAsPeer(t *testing.T) {
	good, err := devcert.NewCA("quorum CA", time.Hour)
	require.NoError(t, err)
	rogue, err := devcert.NewCA("another CA", time.Hour)
	require.NoError(t, err)
	requireOutsidersLearnNothing(t, func(id int32) *TransportTLS {
		if id >= 3 {
			return transportTLS(t, rogue, good)
		}
		return transportTLS(t, good, good)
	}, refusedLines)
}

// TestQuorumRefusesAPeerItDoesNotAllow: every certificate comes from the quorum's CA,
// but the voters admit only the common name "quorum node" (TransportTLS.PeerAllowed,
// which a node with an authorizer sets to its super users and its own principal).
// Voter 3 and a would-be non-voter, named "intruder", complete the handshake and are
// refused before a byte of raft (voter 3 by the voters dialing it too): they never
// learn a record, lead nor join, and the voters log the refusals with the subject.
func TestQuorumRefusesAPeerItDoesNotAllow(t *testing.T) {
	ca, err := devcert.NewCA("quorum CA", time.Hour)
	require.NoError(t, err)
	logs := requireOutsidersLearnNothing(t, func(id int32) *TransportTLS {
		cn := "quorum node"
		if id >= 3 {
			cn = "intruder"
		}
		tt := transportTLSAs(t, cn, ca, ca)
		tt.PeerAllowed = func(leaf *x509.Certificate) bool {
			return leaf.Subject.CommonName == "quorum node"
		}
		return tt
	}, refusedPeerLines)
	for _, i := range []int32{1, 2} {
		for _, e := range logs[i].FilterMessageSnippet("refused a peer").All() {
			require.Equal(t, "CN=intruder", e.ContextMap()["subject"])
		}
		require.Zero(t, refusedLines(logs[i]), "the handshakes themselves succeeded")
	}
}

// requireOutsidersLearnNothing runs voters 1 and 2 (members) and 3 (an outsider) with
// tlsOf's transports, then a non-voter (an outsider too): the members elect and
// commit, log refusals (counted by refused), and the outsiders never learn a record,
// lead, or join. It returns the nodes' logs.
func requireOutsidersLearnNothing(t *testing.T, tlsOf func(id int32) *TransportTLS,
	refused func(*observer.ObservedLogs) int) map[int32]*observer.ObservedLogs {
	t.Helper()
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	c.tlsOf = tlsOf
	logs := observed(c)
	boxes := []*inbox{{}, {}, {}, {}}
	for i := 0; i < 3; i++ {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool {
		l := c.leaderOf()
		return l == 0 || l == 1
	}), "voters 1 and 2 elect no leader")
	lead := c.leaderOf()
	proposeTopic(c, lead, 1)
	require.True(t, waitFor(settleBound, func() bool {
		a, ok := boxes[lead].answers()[1]
		return ok && a.Outcome == broker.MetaCommitted
	}), "voters 1 and 2 do not commit")

	nv, err := c.addNonvoter()
	require.NoError(t, err)
	c.boot(nv, boxes[nv].deliver)
	require.True(t, waitFor(settleBound, func() bool {
		return refused(logs[1])+refused(logs[2]) > 0
	}), "the voters log no refusal")
	time.Sleep(4 * c.timing.Election) // give a wrong join or vote the time to land
	require.Empty(t, boxes[2].applied(), "voter 3, an outsider, learned a record")
	require.Empty(t, boxes[nv].applied(), "the outsider non-voter learned a record")
	require.NotContains(t, c.suffrages(lead), c.nodes[nv].id, "the outsider non-voter was added")
	for _, i := range []int{2, nv} {
		l, _ := c.nodes[i].m.Leader()
		require.NotEqual(t, c.nodes[i].id, l, "node %d leads", c.nodes[i].id)
	}
	require.Contains(t, []int{0, 1}, c.leaderOf(), "the leader is still voter 1 or 2")
	return logs
}
