package broker

// DescribeUserScramCredentials (key 50), version 0 (KIP-554).
//
// Lists users' SCRAM credentials from the image: for each user, the mechanisms and
// iteration counts (never a salt or a key). No users named (null or empty): every user
// with a credential, by name. A user named twice → DUPLICATE_RESOURCE for that user; a
// user without credentials → RESOURCE_NOT_FOUND, as Kafka answers.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

func (n *node) handleDescribeUserScramCredentials(
	m *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	users := n.image.ScramUsers()
	if len(m.Users) == 0 {
		names := make([]string, 0, len(users))
		for u := range users {
			names = append(names, u)
		}
		sort.Strings(names)
		for _, u := range names {
			resp.Results = append(resp.Results, scramResult(u, users))
		}
		return resp
	}
	count := map[string]int{}
	for _, u := range m.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range m.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		rr := scramResult(u.Name, users)
		switch {
		case count[u.Name] > 1:
			rr = kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			rr.User = u.Name
			rr.ErrorCode = kerr.DuplicateResource.Code
			rr.ErrorMessage = strp("Cannot describe SCRAM credentials for the same user " +
				"twice in a single request: " + u.Name)
		case len(rr.CredentialInfos) == 0:
			rr.ErrorCode = kerr.ResourceNotFound.Code
			rr.ErrorMessage = strp("Attempt to describe a user credential that does not " +
				"exist: " + u.Name)
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp
}

func scramResult(user string, users map[string][]meta.ScramCredential,
) kmsg.DescribeUserSCRAMCredentialsResponseResult {
	rr := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	rr.User = user
	for _, c := range users[user] {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = int8(c.Mechanism), c.Iterations
		rr.CredentialInfos = append(rr.CredentialInfos, ci)
	}
	return rr
}
