package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// auditGroup is the auditor's own consumer group, which no other client touches: it
// commits an offset (as a simple consumer: generation -1), reads it back, deletes it
// with OffsetDelete or deletes the whole group with DeleteGroups, and checks each read
// against what it knows. An outcome it cannot know (a timeout, an error) moves it to a
// fresh group.
type auditGroup struct {
	n     int   // the group in use is "audit<n>"
	value int64 // committed offset expected; -1 none
	known bool  // value is known (a commit or delete of this group was acknowledged)
	dels  int   // deletions of the topic when value became known
	count int64
}

func (a *auditor) groupName() string { return fmt.Sprintf("audit%d", a.grp.n) }

// taint abandons the current group: its state is no longer known.
func (a *auditor) taint() {
	a.grp.n++
	a.grp.known, a.grp.value = false, -1
}

func (a *auditor) groupStep() {
	topic := a.topics[0]
	if a.grp.known && a.deletions(topic) != a.grp.dels {
		a.taint() // the topic's offsets went with it
	}
	switch {
	case !a.grp.known || a.rnd.Chance(0.3):
		a.groupCommit(topic)
	case a.rnd.Chance(0.5):
		a.groupFetch(topic)
	case a.rnd.Chance(0.5):
		a.groupOffsetDelete(topic)
	default:
		a.groupDelete()
	}
}

func (a *auditor) groupCommit(topic string) {
	a.grp.count++
	value, dels := a.grp.count, a.deletions(topic)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = a.groupName(), -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, value
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.grp.known = false
	a.sendAt(req, 7, func(r kmsg.Response, err error) {
		ok := err == nil
		if err == nil {
			for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					a.code("offset-commit", p.ErrorCode)
					ok = ok && p.ErrorCode == 0
				}
			}
		}
		if ok && a.deletions(topic) == dels {
			a.grp.known, a.grp.value, a.grp.dels = true, value, dels
		} else {
			a.taint()
		}
		a.next(err)
	})
}

func (a *auditor) groupFetch(topic string) {
	want := a.grp.value
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = a.groupName()
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	a.sendAt(req, 7, func(r kmsg.Response, err error) {
		if err == nil {
			resp := r.(*kmsg.OffsetFetchResponse)
			a.code("offset-fetch", resp.ErrorCode)
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					a.code("offset-fetch", p.ErrorCode)
					// A deletion of the topic applied while the fetch was out takes
					// the offsets with it (the next step taints the group).
					if resp.ErrorCode == 0 && p.ErrorCode == 0 && a.grp.known &&
						a.grp.value == want && p.Offset != want &&
						a.deletions(topic) == a.grp.dels {
						a.failf("OffsetFetch %s %s-0: %d, but the last acknowledged "+
							"change left %d", req.Group, topic, p.Offset, want)
					}
				}
			}
		}
		a.next(err)
	})
}

func (a *auditor) groupOffsetDelete(topic string) {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = a.groupName()
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetDeleteRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.grp.known = false
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		ok := err == nil
		if err == nil {
			resp := r.(*kmsg.OffsetDeleteResponse)
			a.code("offset-delete", resp.ErrorCode)
			ok = resp.ErrorCode == 0
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					a.code("offset-delete", p.ErrorCode)
					ok = ok && p.ErrorCode == 0
				}
			}
		}
		if ok {
			a.grp.known, a.grp.value = true, -1
		} else {
			a.taint()
		}
		a.next(err)
	})
}

// groupDelete deletes the auditor's group (and one that never existed: refused).
func (a *auditor) groupDelete() {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{a.groupName(), "audit-never"}
	a.grp.known = false
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		ok := err == nil
		if err == nil {
			for _, g := range r.(*kmsg.DeleteGroupsResponse).Groups {
				a.code("delete-groups", g.ErrorCode)
				switch g.Group {
				case "audit-never":
					if g.ErrorCode == 0 {
						a.failf("DeleteGroups of a group that never existed succeeded")
					}
				default:
					ok = ok && g.ErrorCode == 0
				}
			}
		}
		if ok {
			a.grp.known, a.grp.value = true, -1
		} else {
			a.taint()
		}
		a.next(err)
	})
}

func (a *auditor) listGroups() {
	req := kmsg.NewPtrListGroupsRequest()
	if a.rnd.Chance(0.3) {
		req.StatesFilter = []string{"Stable", "Empty"}
	}
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			a.code("list-groups", r.(*kmsg.ListGroupsResponse).ErrorCode)
		}
		a.next(err)
	})
}

// memberGroups lists the consumer groups the members use, and one nobody uses.
func (a *auditor) memberGroups() []string {
	out := []string{"cg-nobody"}
	seen := map[string]bool{}
	for _, m := range a.w.cfg.Members {
		if !seen[m.Group] {
			seen[m.Group] = true
			out = append(out, m.Group)
		}
	}
	return out
}

func (a *auditor) describeGroups() {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = append(a.memberGroups(), a.groupName())
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
				a.code("describe-groups", g.ErrorCode)
				a.members[g.Group] = a.members[g.Group][:0]
				for _, m := range g.Members {
					a.members[g.Group] = append(a.members[g.Group], m.MemberID)
				}
			}
		}
		a.next(err)
	})
}

// zombie sends what a consumer that was dropped long ago sends for a group: a
// heartbeat, a sync, a leave or an offset commit with an old generation and a member
// id the group does not have (any more). None may succeed.
func (a *auditor) zombie() {
	groups := a.memberGroups()
	g := groups[a.rnd.Intn(len(groups))]
	member := fmt.Sprintf("zombie-%d", a.rnd.Intn(1000))
	gen := int32(a.rnd.Between(0, 5))
	check := func(api string, code int16) {
		a.code(api, code)
		if code == 0 {
			a.failf("%s from unknown member %s of group %s (generation %d) succeeded",
				api, member, g, gen)
		}
	}
	var req kmsg.Request
	var answer func(kmsg.Response)
	version := int16(-1) // the client's own
	switch a.rnd.Intn(4) {
	case 0:
		m := kmsg.NewPtrHeartbeatRequest()
		m.Group, m.MemberID, m.Generation = g, member, gen
		req, answer = m, func(r kmsg.Response) {
			check("heartbeat", r.(*kmsg.HeartbeatResponse).ErrorCode)
		}
	case 1:
		m := kmsg.NewPtrSyncGroupRequest()
		m.Group, m.MemberID, m.Generation = g, member, gen
		m.ProtocolType, m.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		req, answer = m, func(r kmsg.Response) {
			check("sync-group", r.(*kmsg.SyncGroupResponse).ErrorCode)
		}
	case 2:
		m := kmsg.NewPtrLeaveGroupRequest()
		m.Group, m.MemberID = g, member
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = member
		m.Members = append(m.Members, lm)
		req, answer = m, func(r kmsg.Response) {
			resp := r.(*kmsg.LeaveGroupResponse)
			if resp.ErrorCode != 0 || len(resp.Members) == 0 {
				check("leave-group", resp.ErrorCode)
			}
			for _, rm := range resp.Members {
				check("leave-group", rm.ErrorCode)
			}
		}
	default:
		m := kmsg.NewPtrOffsetCommitRequest()
		m.Group, m.MemberID, m.Generation = g, member, max(gen, 1)
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = a.topics[0]
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1<<40
		rt.Partitions = append(rt.Partitions, rp)
		m.Topics = append(m.Topics, rt)
		// v0 carries no generation or member: a simple consumer's commit, allowed.
		version = max(a.vers[int16(kmsg.OffsetCommit)], 1)
		req, answer = m, func(r kmsg.Response) {
			for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					check("offset-commit", p.ErrorCode)
				}
			}
		}
	}
	a.sendAnswered(req, version, answer)
}
