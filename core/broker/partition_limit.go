package broker

// The node-wide bound on partitions (sluice.max.partitions) and the check that every
// partition a create committed could open its log.
//
// A create that would take the node past MaxPartitions is refused before anything is
// proposed, with POLICY_VIOLATION and a message naming the setting: Kafka answers a
// creation its policy forbids that way, and the code is not retriable, so a client does
// not loop on it. CreateTopics, CreatePartitions and Metadata auto-creation all count
// partitions already hosted plus those planned earlier in the same request.
//
// If a committed partition's log cannot be opened anyway (descriptors or memory
// exhausted), the request that created it is not answered with success: the topic is
// answered KAFKA_STORAGE_ERROR with the cause, as its partitions are served.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
)

// pendingTopics is what the creations accepted so far in one request add: their
// collision names (collision name → name) and their partitions.
type pendingTopics struct {
	names      map[string]string
	partitions int64
}

func newPendingTopics() *pendingTopics {
	return &pendingTopics{names: map[string]string{}}
}

// partitionBudget refuses adding n partitions when the node would then host more than
// sluice.max.partitions (0: unbounded). planned counts those accepted earlier in the
// same request.
func (rm *replicaManager) partitionBudget(n, planned int64) (int16, string) {
	limit := int64(rm.cfg.MaxPartitions)
	if limit <= 0 || rm.partitionTotal+planned+n <= limit {
		return 0, ""
	}
	return kerr.PolicyViolation.Code, fmt.Sprintf("Adding %d partitions would bring this "+
		"node to %d partitions, above sluice.max.partitions=%d (%d hosted, %d more in this "+
		"request). Delete topics, or raise the limit (docs/limits.md, Files and "+
		"descriptors).", n, rm.partitionTotal+planned+n, limit, rm.partitionTotal, planned)
}

// countPartitions keeps partitionTotal in step with the image as a record applies.
func (rm *replicaManager) countPartitions(before, after int32) {
	rm.partitionTotal += int64(after) - int64(before)
}

// noteOpen records why a partition's log did not open, or forgets it (err nil).
func (rm *replicaManager) noteOpen(tp core.TopicPartition, err error) {
	if err == nil {
		delete(rm.openErrs, tp)
		return
	}
	rm.openErrs[tp] = err
}

// unopened returns an error code and message when a partition of topic in [from, to)
// committed but is not served because its log did not open.
func (rm *replicaManager) unopened(topic string, from, to int32) (int16, string) {
	bad, first := 0, error(nil)
	for p := from; p < to; p++ {
		tp := core.TopicPartition{Topic: topic, Partition: p}
		if rm.replicas[tp] != nil || !rm.hostedHere(tp) {
			continue // open, or placed on other nodes only
		}
		bad++
		if first == nil {
			first = rm.openErrs[tp]
		}
	}
	if bad == 0 {
		return 0, ""
	}
	return kerr.KafkaStorageError.Code, fmt.Sprintf("The topic was created, but %d of its "+
		"partitions could not open their logs and are offline until the node restarts with "+
		"the cause fixed: %v", bad, first)
}
