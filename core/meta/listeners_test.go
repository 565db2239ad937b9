package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A registration's listeners are kept by the image, survive a snapshot's JSON round
// trip, and answer Endpoint by name; a registration without them (every record written
// before named listeners) encodes without the field and answers with Host and Port.
func TestRegistrationListeners(t *testing.T) {
	im := NewImage()
	ls := []Endpoint{{Name: "INTERNAL", Host: "b1", Port: 9092},
		{Name: "EXTERNAL", Host: "b1.example", Port: 9093}}
	require.NoError(t, im.Apply(Record{Kind: KindBrokerRegistered, NodeID: 1, BrokerEpoch: 1,
		Host: "b1", Port: 9092, Listeners: ls}))
	require.NoError(t, im.Apply(Record{Kind: KindBrokerRegistered, NodeID: 2, BrokerEpoch: 2,
		Host: "b2", Port: 9092}))

	b1, _ := im.Broker(1)
	host, port, ok := b1.Endpoint("EXTERNAL")
	require.True(t, ok)
	require.Equal(t, "b1.example", host)
	require.EqualValues(t, 9093, port)
	_, _, ok = b1.Endpoint("SSL")
	require.False(t, ok)
	b2, _ := im.Broker(2)
	host, port, ok = b2.Endpoint("EXTERNAL")
	require.True(t, ok)
	require.Equal(t, "b2", host)
	require.EqualValues(t, 9092, port)

	raw, err := json.Marshal(im.Snapshot())
	require.NoError(t, err)
	var recs []Record
	require.NoError(t, json.Unmarshal(raw, &recs))
	again := NewImage()
	for _, r := range recs {
		require.NoError(t, again.Apply(r))
	}
	require.True(t, im.Equal(again))

	old, err := json.Marshal(Record{Kind: KindBrokerRegistered, NodeID: 2, BrokerEpoch: 2,
		Host: "b2", Port: 9092})
	require.NoError(t, err)
	require.NotContains(t, string(old), "listeners")
}
