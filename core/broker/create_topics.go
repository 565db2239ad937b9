package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleCreateTopics(r Request, m *kmsg.CreateTopicsRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
