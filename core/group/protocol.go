package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// candidates returns the protocol names every member supports.
func (g *Group) candidates() map[string]bool {
	var set map[string]bool
	for _, m := range g.members {
		mine := map[string]bool{}
		for _, p := range m.protocols {
			if set == nil || set[p.Name] {
				mine[p.Name] = true
			}
		}
		set = mine
	}
	return set
}

// supportsOneOf reports whether a joining member shares a protocol with every member.
func (g *Group) supportsOneOf(ps []Protocol) bool {
	c := g.candidates()
	for _, p := range ps {
		if c[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol of a new generation: among the protocols every
// member supports, each member votes for the one it prefers most; the most votes win,
// and a tie goes to the leader's preference.
func (g *Group) selectProtocol() string {
	c := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if c[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, p := range g.members[g.leader].protocols {
		if c[p.Name] && votes[p.Name] > bestVotes {
			best, bestVotes = p.Name, votes[p.Name]
		}
	}
	return best
}

// SubscribedTopics returns the topics the members of a "consumer" group subscribe to,
// sorted, read from their metadata for the chosen (or else their preferred) protocol.
// known is false when the group is not a consumer group or some member's metadata does
// not parse: the caller must then assume every topic may be in use.
func (g *Group) SubscribedTopics() (topics []string, known bool) {
	if g.protocolType != "consumer" {
		return nil, len(g.members) == 0
	}
	set := map[string]bool{}
	for _, m := range g.members {
		md := m.metadataFor(g.protocol)
		if g.protocol == "" && len(m.protocols) > 0 {
			md = m.protocols[0].Metadata
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(md); err != nil {
			return nil, false
		}
		for _, t := range cm.Topics {
			set[t] = true
		}
	}
	for t := range set {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return topics, true
}
