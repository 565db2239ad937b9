package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleDescribeConfigs(m *kmsg.DescribeConfigsRequest) kmsg.Response {
	return m.ResponseKind()
}
