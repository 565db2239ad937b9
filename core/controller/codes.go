package controller

import "github.com/twmb/franz-go/pkg/kerr"

// The Kafka error codes the controller answers with.
var (
	codeNotController         = kerr.NotController.Code
	codeInvalidRequest        = kerr.InvalidRequest.Code
	codeUnknownTopicPartition = kerr.UnknownTopicOrPartition.Code
	codeFencedLeaderEpoch     = kerr.FencedLeaderEpoch.Code
	codeInvalidUpdateVersion  = kerr.InvalidUpdateVersion.Code
	codeIneligibleReplica     = kerr.IneligibleReplica.Code
	codeStaleBrokerEpoch      = kerr.StaleBrokerEpoch.Code
	codeNotRegistered         = kerr.BrokerIDNotRegistered.Code
	codeDuplicateRegistration = kerr.DuplicateBrokerRegistration.Code
	codeInconsistentClusterID = kerr.InconsistentClusterID.Code
	codeInvalidReplication    = kerr.InvalidReplicationFactor.Code
	codeInvalidPartitions     = kerr.InvalidPartitions.Code
	// codeInvalidReplicaAssignment refuses a manual assignment (CheckAssignment).
	codeInvalidReplicaAssignment = kerr.InvalidReplicaAssignment.Code
	codeTopicExists              = kerr.TopicAlreadyExists.Code
	codeElectionNotNeeded        = kerr.ElectionNotNeeded.Code
	codePreferredNotAvailable    = kerr.PreferredLeaderNotAvailable.Code
	codeNoEligibleLeader         = kerr.EligibleLeadersNotAvailable.Code
	// codeRetriable answers a request whose proposal did not commit (not leader aside):
	// rejected, unknown outcome, or committed but overtaken by an earlier record. The
	// caller retries and is checked against the image as it is then.
	codeRetriable = kerr.RequestTimedOut.Code
)
