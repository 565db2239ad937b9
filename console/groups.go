package console

import (
	"context"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocolType"`
	Protocol     string `json:"protocol"`
	Members      int    `json:"members"`
	Coordinator  int32  `json:"coordinator"`
	TotalLag     *int64 `json:"totalLag"` // nil when not computed or unknown
	Error        string `json:"error,omitempty"`
}

// listGroups lists the groups, sorted by name, at most MaxGroups of them.
func (c *Console) listGroups(ctx context.Context) ([]kadm.ListedGroup, bool, error) {
	lg, err := c.adm.ListGroups(ctx)
	if err != nil && len(lg) == 0 {
		return nil, false, err
	}
	out := make([]kadm.ListedGroup, 0, len(lg))
	for _, g := range lg {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	truncated := len(out) > MaxGroups
	if truncated {
		out = out[:MaxGroups]
	}
	return out, truncated, nil
}

func (c *Console) groups(ctx context.Context, _ *http.Request) (any, error) {
	listed, truncated, err := c.listGroups(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, min(len(listed), MaxLagGroups))
	for i, g := range listed {
		if i < MaxLagGroups {
			names = append(names, g.Group)
		}
	}
	var lags kadm.DescribedGroupLags
	if len(names) > 0 {
		lags, err = c.adm.Lag(ctx, names...)
		if err != nil && len(lags) == 0 {
			return nil, err
		}
	}
	out := make([]groupSummary, 0, len(listed))
	for _, g := range listed {
		s := groupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType,
			Coordinator: g.Coordinator}
		if l, ok := lags[g.Group]; ok {
			s.State, s.Protocol, s.Members = l.State, l.Protocol, len(l.Members)
			if e := l.Error(); e != nil {
				s.Error = e.Error()
			} else {
				t := l.Lag.Total()
				s.TotalLag = &t
			}
		}
		out = append(out, s)
	}
	return map[string]any{"groups": out, "truncated": truncated,
		"lagComputedFor": len(names)}, nil
}

type memberJSON struct {
	MemberID   string        `json:"memberId"`
	InstanceID *string       `json:"instanceId"`
	ClientID   string        `json:"clientId"`
	ClientHost string        `json:"clientHost"`
	Assigned   []assignedTPs `json:"assigned"`
}

type assignedTPs struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

type lagJSON struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Committed   int64  `json:"committed"` // -1: no commit
	StartOffset int64  `json:"startOffset"`
	EndOffset   int64  `json:"endOffset"`
	Lag         int64  `json:"lag"` // -1: unknown
	MemberID    string `json:"memberId"`
	Error       string `json:"error,omitempty"`
}

func (c *Console) group(ctx context.Context, r *http.Request) (any, error) {
	name, herr := groupParam(r)
	if herr != nil {
		return nil, herr
	}
	listed, _, err := c.listGroups(ctx)
	if err != nil {
		return nil, err
	}
	found := false
	for _, g := range listed {
		found = found || g.Group == name
	}
	if !found {
		return nil, errf(http.StatusNotFound, "unknown group %q", name)
	}
	lags, err := c.adm.Lag(ctx, name)
	if err != nil {
		return nil, err
	}
	l, ok := lags[name]
	if !ok {
		return nil, errf(http.StatusNotFound, "unknown group %q", name)
	}
	if e := l.Error(); e != nil {
		return nil, e
	}
	members := make([]memberJSON, 0, len(l.Members))
	for _, m := range l.Members {
		mj := memberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, Assigned: []assignedTPs{}}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				mj.Assigned = append(mj.Assigned, assignedTPs{Topic: t.Topic,
					Partitions: nonNil(t.Partitions)})
			}
		}
		members = append(members, mj)
	}
	parts := []lagJSON{}
	for i, ml := range l.Lag.Sorted() {
		if i >= MaxPartitions {
			break
		}
		lj := lagJSON{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At,
			StartOffset: ml.Start.Offset, EndOffset: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			lj.MemberID = ml.Member.MemberID
		}
		if ml.Err != nil {
			lj.Error = ml.Err.Error()
		}
		parts = append(parts, lj)
	}
	return map[string]any{"group": name, "state": l.State, "protocolType": l.ProtocolType,
		"protocol": l.Protocol, "coordinator": l.Coordinator.NodeID, "members": members,
		"partitions": parts, "totalLag": l.Lag.Total(),
		"truncated": len(l.Lag.Sorted()) > MaxPartitions}, nil
}
