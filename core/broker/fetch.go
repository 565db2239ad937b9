package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

type fetchState struct{}

// TODO(stub)
func (b *Broker) handleFetch(r Request, m *kmsg.FetchRequest) { b.reply(r, m.ResponseKind()) }

func (b *Broker) connClosed(conn uint64) {}

// partitionGone fails every waiter on a partition that was just removed.
func (b *Broker) partitionGone(tp core.TopicPartition) {}
