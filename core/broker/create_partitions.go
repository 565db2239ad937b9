package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleCreatePartitions(r Request, m *kmsg.CreatePartitionsRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
