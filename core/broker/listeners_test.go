package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// doOnListener answers req as received on the named listener.
func (h *harness) doOnListener(listener string, req kmsg.Request) kmsg.Response {
	h.t.Helper()
	h.nextID++
	id := h.nextID
	decoded := roundTripRequest(h.t, req)
	h.env.requests[id] = decoded
	h.step(Request{Conn: 1, ID: id, Msg: decoded, Listener: listener, Principal: "User:x"})
	h.settle()
	resp, ok := h.reply(id)
	require.True(h.t, ok)
	return resp
}

// Metadata, DescribeCluster and FindCoordinator answer with each broker's address on the
// listener the request arrived on: this node's own from its config, the others' from
// their registrations; a broker that registered listeners without that one is left
// out, and one registered before named listeners is listed with its one address.
func TestClusterViewFollowsTheRequestsListener(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.AdvertisedHost, c.AdvertisedPort = "self", 9092
		c.Listeners = []meta.Endpoint{{Name: "PLAINTEXT", Host: "self", Port: 9092},
			{Name: "SSL", Host: "self-tls", Port: 9093}}
	})
	reg := func(id int32, epoch int64, ls []meta.Endpoint) {
		h.commitMeta(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: id,
			BrokerEpoch: epoch, Host: "b" + string('0'+rune(id)), Port: 9092,
			Listeners: ls, BrokerState: meta.BrokerUnfenced})
	}
	reg(1, 1, nil)
	reg(2, 2, []meta.Endpoint{{Name: "PLAINTEXT", Host: "b2", Port: 9092},
		{Name: "SSL", Host: "b2-tls", Port: 9093}})
	reg(3, 3, []meta.Endpoint{{Name: "PLAINTEXT", Host: "b3", Port: 9092}})
	reg(4, 4, nil)

	type hp struct {
		id   int32
		host string
		port int32
	}
	brokersOf := func(listener string) []hp {
		m := kmsg.NewPtrMetadataRequest()
		m.SetVersion(12)
		var out []hp
		for _, b := range h.doOnListener(listener, m).(*kmsg.MetadataResponse).Brokers {
			out = append(out, hp{b.NodeID, b.Host, b.Port})
		}
		dc := kmsg.NewPtrDescribeClusterRequest()
		var got []hp
		for _, b := range h.doOnListener(listener, dc).(*kmsg.DescribeClusterResponse).Brokers {
			got = append(got, hp{b.NodeID, b.Host, b.Port})
		}
		require.Equal(t, out, got, "DescribeCluster agrees with Metadata")
		return out
	}
	require.Equal(t, []hp{{1, "self-tls", 9093}, {2, "b2-tls", 9093}, {4, "b4", 9092}},
		brokersOf("SSL"))
	require.Equal(t, []hp{{1, "self", 9092}, {2, "b2", 9092}, {3, "b3", 9092},
		{4, "b4", 9092}}, brokersOf("PLAINTEXT"))
	require.Equal(t, []hp{{1, "self", 9092}, {2, "b2", 9092}, {3, "b3", 9092},
		{4, "b4", 9092}}, brokersOf(""), "no listener: the default addresses")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorKey = "g"
	resp := h.doOnListener("SSL", fc).(*kmsg.FindCoordinatorResponse)
	if resp.ErrorCode == 0 {
		require.Equal(t, "self-tls", resp.Host)
		require.EqualValues(t, 9093, resp.Port)
	}
	fc.CoordinatorType = 1 // a transaction coordinator: always this node
	resp = h.doOnListener("SSL", fc).(*kmsg.FindCoordinatorResponse)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, "self-tls", resp.Host)
	require.EqualValues(t, 9093, resp.Port)
}
