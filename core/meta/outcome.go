package meta

// Outcome is how the metadata log answered a proposal (the metadata port's rule M3,
// core/broker env.go). The broker and the controller both propose, so it lives here.
type Outcome uint8

// The answers to a proposal.
const (
	// Committed: committed at the answer's index; its MetaApplied came first (M4).
	Committed Outcome = iota + 1
	// NotLeader: this node cannot propose (not the quorum leader); the record was not
	// and will not be committed. The answer's Leader names the leader, or is -1.
	NotLeader
	// Rejected: the log refused the record (an injected failure in the simulator, a
	// full queue); it was not and will not be committed. A retry is safe.
	Rejected
	// Unknown: the outcome is not known (leadership lost, a store write in doubt); the
	// record may still commit, and then arrives as MetaApplied.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case NotLeader:
		return "not-leader"
	case Rejected:
		return "rejected"
	case Unknown:
		return "unknown"
	default:
		return "outcome(?)"
	}
}
