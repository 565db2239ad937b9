package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleListOffsets(m *kmsg.ListOffsetsRequest) kmsg.Response {
	return m.ResponseKind()
}
