package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/meta"
)

// TestUnregisterADeadNonvoterBroker: a voter, an unknown id, a live broker and a dead
// one still hosting a replica are refused, each with its own message; a dead broker
// hosting nothing is removed from the image, and its id can register again later with
// a greater epoch.
func TestUnregisterADeadNonvoterBroker(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.c.SetVoters([]int32{1, 2, 3})
	h.settle()
	epochs := h.cluster(4, 0)
	id := h.ask(CreateTopic{Name: "t", Assignment: [][]int32{{1, 4}}})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())

	unregister := func(node int32) UnregisterBrokerResponse {
		id := h.ask(UnregisterBroker{NodeID: node})
		h.settle()
		return h.answer(id).(UnregisterBrokerResponse)
	}
	r := unregister(1)
	require.Equal(t, codeInvalidRequest, r.Err)
	require.Contains(t, r.Message, "voter of the metadata quorum")
	r = unregister(9)
	require.Equal(t, codeNotRegistered, r.Err)
	r = unregister(4)
	require.Equal(t, codeInvalidRequest, r.Err)
	require.Contains(t, r.Message, "is unfenced: it is alive")

	h.keepAlive(10000, epochs, 1, 2, 3) // broker 4 is silent: fenced
	b, _ := h.image.Broker(4)
	require.Equal(t, meta.BrokerFenced, b.State)
	r = unregister(4)
	require.Equal(t, codeInvalidRequest, r.Err)
	require.Contains(t, r.Message, "still hosts 1 partition replicas (t-0 first)")

	h.commitRecord(meta.Record{Kind: meta.KindTopicDeleted, Topic: "t"})
	require.Zero(t, unregister(4).Err)
	_, ok := h.image.Broker(4)
	require.False(t, ok, "the harness's log removed it")
	_, ok = h.c.Image().Broker(4)
	require.False(t, ok, "the controller's image removed it")
	require.Equal(t, codeNotRegistered, unregister(4).Err, "a second time")
	require.Zero(t, h.refused, "every committed record applied")

	require.Greater(t, h.register(4, 2, ""), epochs[4], "the machine comes back")
	_, ok = h.image.Broker(4)
	require.True(t, ok)
}

// TestUnregisterRefusesABrokerHeardFromWithinItsSession: a fenced broker that still
// heartbeats (it asks to stay fenced) is alive.
func TestUnregisterRefusesABrokerHeardFromWithinItsSession(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epoch := h.register(5, 1, "")
	id := h.ask(Heartbeat{NodeID: 5, BrokerEpoch: epoch, WantFence: true})
	h.settle()
	require.True(t, h.answer(id).(HeartbeatResponse).Fenced)
	id = h.ask(UnregisterBroker{NodeID: 5})
	h.settle()
	r := h.answer(id).(UnregisterBrokerResponse)
	require.Equal(t, codeInvalidRequest, r.Err)
	require.Contains(t, r.Message, "may be alive")
	h.advance(10000)
	h.settle()
	id = h.ask(UnregisterBroker{NodeID: 5})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
}
