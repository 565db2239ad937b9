package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleDeleteRecords(m *kmsg.DeleteRecordsRequest) kmsg.Response {
	return m.ResponseKind()
}
