package broker

// ElectLeaders (key 43), versions 0–2 (KIP-183; v1 adds ElectionType and a top-level
// error code, KIP-460; v2 is flexible).
//
// Moves leadership of the named partitions (all of them when Topics is null) to their
// preferred replica, the first of each replica list, as kafka-leader-election.sh
// --election-type preferred and kadm.ElectLeaders ask; or, with ElectionType 1
// (--election-type unclean), gives a partition without an eligible leader one, from
// outside the ISR when no ISR member can lead. Clients send it to the controller
// Metadata names.
//   - A node without a metadata quorum leads every partition itself, which is its only
//     replica: ELECTION_NOT_NEEDED (UNKNOWN_TOPIC_OR_PARTITION for one that does not
//     exist).
//   - A quorum node that is not the active controller answers NOT_CONTROLLER.
//   - An ElectionType other than 0 and 1 is INVALID_REQUEST per partition.
//   - Otherwise the controller decides. Preferred (controller.Preferred):
//     ELECTION_NOT_NEEDED when the preferred replica leads,
//     PREFERRED_LEADER_NOT_AVAILABLE when it is not an eligible ISR member. Unclean
//     (controller.Unclean): ELECTION_NOT_NEEDED when the leader is eligible,
//     ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica can lead; records the old ISR
//     acknowledged may be lost, which the controller logs at warn. Both:
//     UNKNOWN_TOPIC_OR_PARTITION for a partition it does not know; a change is
//     answered once committed. One that did not commit is
//     REQUEST_TIMED_OUT (retriable); a controller that lost its leadership meanwhile,
//     NOT_CONTROLLER.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

// electAsk is an ElectLeaders waiting for the controller's answer.
type electAsk struct {
	req  Request
	resp *kmsg.ElectLeadersResponse
	// at is, per asked partition (in the order sent), its topic and partition index in
	// resp; nil when every partition was asked (Topics null): resp is built from the
	// answer.
	at  map[core.TopicPartition][2]int
	all bool
}

func (ctl *adminController) handleElectLeaders(r Request, m *kmsg.ElectLeadersRequest) {
	resp := m.ResponseKind().(*kmsg.ElectLeadersResponse)
	msg := controller.ElectLeaders{Unclean: m.Version >= 1 && m.ElectionType == 1}
	at := map[core.TopicPartition][2]int{}
	for ti, t := range m.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			tp := core.TopicPartition{Topic: t.Topic, Partition: p}
			if code, why := ctl.electLocally(m, tp); code != 0 {
				rp.ErrorCode, rp.ErrorMessage = code, strp(why)
			} else if _, dup := at[tp]; !dup {
				msg.Partitions = append(msg.Partitions, tp)
				at[tp] = [2]int{ti, len(rt.Partitions)}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	all := m.Topics == nil
	if all {
		if code, why := ctl.electLocally(m, core.TopicPartition{}); code != 0 &&
			code != kerr.UnknownTopicOrPartition.Code {
			ctl.electAllRefused(r, resp, code, why)
			return
		}
	}
	if ctl.notController() {
		resp.ErrorCode = kerr.NotController.Code
	}
	if !all && len(msg.Partitions) == 0 {
		ctl.reply(r, resp)
		return
	}
	id := ctl.token()
	if ctl.elections == nil {
		ctl.elections = map[uint64]electAsk{}
	}
	ctl.elections[id] = electAsk{req: r, resp: resp, at: at, all: all}
	ctl.lg.Info("leader election asked", zap.Int("partitions", len(msg.Partitions)),
		zap.Bool("all", all), zap.Bool("unclean", msg.Unclean))
	ctl.ctlPort.AskController(ctl.leader, id, msg, controllerAskTimeoutMs)
}

// electLocally is what the broker answers for one partition without asking the
// controller (0: ask it); tp is zero for an election of every partition.
func (ctl *adminController) electLocally(m *kmsg.ElectLeadersRequest,
	tp core.TopicPartition) (int16, string) {
	_, _, ok := ctl.image.Partition(tp.Topic, tp.Partition)
	switch {
	case m.Version >= 1 && m.ElectionType != 0 && m.ElectionType != 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown election type %d: 0 is "+
			"preferred, 1 unclean.", m.ElectionType)
	case ctl.ctlPort == nil && tp != (core.TopicPartition{}) && !ok:
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Partition %s does not exist.",
			tp)
	case ctl.ctlPort == nil:
		return kerr.ElectionNotNeeded.Code, "This node runs without a metadata quorum " +
			"(--voters): it is the only replica and leads every partition."
	case ctl.notController():
		return kerr.NotController.Code, "This node is not the active controller."
	}
	return 0, ""
}

// electAllRefused answers an election of every partition that the broker refuses
// without asking the controller: every partition it knows, with code.
func (ctl *adminController) electAllRefused(r Request, resp *kmsg.ElectLeadersResponse,
	code int16, why string) {
	if code == kerr.NotController.Code || code == kerr.InvalidRequest.Code {
		resp.ErrorCode = code
	}
	for _, name := range ctl.image.TopicNames() {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = name
		for p := range ctl.image.Topic(name).Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, strp(why)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	ctl.reply(r, resp)
}

// electAnswered takes the controller's answer to an ElectLeaders; false when in
// answers something else.
func (ctl *adminController) electAnswered(in ControllerAnswer) bool {
	w, ok := ctl.elections[in.ID]
	if !ok {
		return false
	}
	delete(ctl.elections, in.ID)
	r, _ := in.Resp.(controller.ElectLeadersResponse)
	all := int16(0)
	switch {
	case in.Err != nil && ctl.notController(), in.Err == nil && r.Err != 0:
		all = kerr.NotController.Code // the controller moved: the client retries there
	case in.Err != nil:
		all = kerr.RequestTimedOut.Code
		ctl.lg.Info("leader election not answered by the controller",
			zap.Error(in.Err))
	}
	if all != 0 && w.resp.Version >= 1 {
		w.resp.ErrorCode = all
	}
	if w.all {
		w.resp.Topics = electResultsByTopic(r.Results, all)
	} else {
		for tp, idx := range w.at {
			rp := &w.resp.Topics[idx[0]].Partitions[idx[1]]
			rp.ErrorCode = all
			for _, res := range r.Results {
				if res.TP == tp && all == 0 {
					rp.ErrorCode = res.Err
				}
			}
			if rp.ErrorCode != 0 {
				rp.ErrorMessage = strp(kerr.ErrorForCode(rp.ErrorCode).Error())
			}
		}
	}
	ctl.reply(w.req, w.resp)
	return true
}

// electResultsByTopic groups the controller's results (sorted by partition) by topic.
func electResultsByTopic(results []controller.ElectResult,
	all int16) []kmsg.ElectLeadersResponseTopic {
	var out []kmsg.ElectLeadersResponseTopic
	for _, res := range results {
		if len(out) == 0 || out[len(out)-1].Topic != res.TP.Topic {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = res.TP.Topic
			out = append(out, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = res.TP.Partition, res.Err
		if all != 0 {
			rp.ErrorCode = all
		}
		if rp.ErrorCode != 0 {
			rp.ErrorMessage = strp(kerr.ErrorForCode(rp.ErrorCode).Error())
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
	}
	return out
}
