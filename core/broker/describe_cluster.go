package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// TODO(stub): replaced by the real handler.
func (b *Broker) handleDescribeCluster(m *kmsg.DescribeClusterRequest) kmsg.Response {
	return m.ResponseKind()
}
