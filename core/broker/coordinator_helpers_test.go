package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers of the tests of a coordinator that moves with the offsets partitions.

// coordinatorFor asks h who coordinates group (FindCoordinator v4): node, port, code.
func (h *harness) coordinatorFor(group string) (int32, int32, int16) {
	h.t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorKeys = []string{group}
	resp := h.do(req).(*kmsg.FindCoordinatorResponse)
	require.Len(h.t, resp.Coordinators, 1)
	c := resp.Coordinators[0]
	return c.NodeID, c.Port, c.ErrorCode
}

// groupLedBy returns a group id whose coordinator h names node.
func (h *harness) groupLedBy(t *testing.T, node int32) string {
	t.Helper()
	for i := range 100 {
		id := fmt.Sprintf("g%d", i)
		if n, _, code := h.coordinatorFor(id); code == 0 && n == node {
			return id
		}
	}
	t.Fatalf("no group coordinated by node %d", node)
	return ""
}
