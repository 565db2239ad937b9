package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleInitProducerID(r Request, m *kmsg.InitProducerIDRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
