package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleDeleteTopics(r Request, m *kmsg.DeleteTopicsRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
