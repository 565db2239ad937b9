package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
)

// A message posted while another is being handled is handled at once, before the
// handler that posted it goes on: exactly where the direct call it replaced ran. A
// queue drained only after the outer handler would reorder the effects (and the
// simulator's traces).
func TestPostHandlesEachMessageWhereItIsPosted(t *testing.T) {
	var n node
	var got []string
	tp := func(p int32) core.TopicPartition { return core.TopicPartition{Topic: "t", Partition: p} }
	n.route = func(m message) {
		d := m.(msgDurable)
		got = append(got, "begin "+d.tp.String())
		if d.tp.Partition == 0 {
			n.post(msgDurable{tp: tp(1)})
			n.post(msgDurable{tp: tp(2)})
		}
		got = append(got, "end "+d.tp.String())
	}
	n.post(msgDurable{tp: tp(0)})
	require.Equal(t, []string{"begin t-0", "begin t-1", "end t-1", "begin t-2", "end t-2",
		"end t-0"}, got)
	require.Empty(t, n.queue)
}
