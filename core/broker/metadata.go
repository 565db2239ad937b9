package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleMetadata(r Request, m *kmsg.MetadataRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
