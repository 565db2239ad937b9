package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleAlterConfigs(r Request, m *kmsg.AlterConfigsRequest) {
	resp := m.ResponseKind()
	b.reply(r, resp)
}
