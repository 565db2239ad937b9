package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleIncrementalAlterConfigs(r Request, m *kmsg.IncrementalAlterConfigsRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
