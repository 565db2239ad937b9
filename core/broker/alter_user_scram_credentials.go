package broker

// AlterUserScramCredentials (key 51), version 0 (KIP-554).
//
// Deletes and upserts users' SCRAM credentials in the replicated metadata: one
// ScramCredentialDeleted or ScramCredentialSet record per change, run through the admin
// queue like the other metadata changes. An upsertion carries the salt, the iteration
// count and the salted password (the client salts the password: kadm does); the node
// keeps the stored key and the server key derived from it (scram.go), never the salted
// password.
//
// One result per user named, in request order. A user and mechanism named more than
// once → DUPLICATE_RESOURCE; an empty name, an iteration count outside 4096..16384, or an empty
// salt or salted password → UNACCEPTABLE_CREDENTIAL; an unknown mechanism →
// UNSUPPORTED_SASL_MECHANISM; deleting a credential that does not exist →
// RESOURCE_NOT_FOUND. A user with any refused change has none of its changes applied.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// opAlterScram is an AlterUserScramCredentials request; at[j] is recs[j]'s entry in
// resp.Results.
type opAlterScram struct {
	adminBase
	m    *kmsg.AlterUserSCRAMCredentialsRequest
	resp *kmsg.AlterUserSCRAMCredentialsResponse
	at   []int
}

func (ctl *adminController) handleAlterUserScramCredentials(r Request,
	m *kmsg.AlterUserSCRAMCredentialsRequest) {
	if ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	ctl.serialize(&opAlterScram{adminBase: adminBase{req: r}, m: m})
}

// scramChange is one deletion or upsertion of the request.
type scramChange struct {
	user       string
	mech       int8
	del        bool
	iterations int32
	salt, spw  []byte
}

// alterScram checks every change against the image and proposes the records of the
// users whose changes are all acceptable; alterScramCommitted answers.
func (ctl *adminController) alterScram(op *opAlterScram) {
	var changes []scramChange
	for _, d := range op.m.Deletions {
		changes = append(changes, scramChange{user: d.Name, mech: d.Mechanism, del: true})
	}
	for _, u := range op.m.Upsertions {
		changes = append(changes, scramChange{user: u.Name, mech: u.Mechanism,
			iterations: u.Iterations, salt: u.Salt, spw: u.SaltedPassword})
	}
	op.resp = op.m.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	type pair struct {
		user string
		mech int8
	}
	index, count := map[string]int{}, map[pair]int{}
	for _, c := range changes {
		if _, ok := index[c.user]; !ok {
			index[c.user] = len(op.resp.Results)
			rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			rr.User = c.user
			op.resp.Results = append(op.resp.Results, rr)
		}
		count[pair{c.user, c.mech}]++
	}
	perUser := map[string][]meta.Record{}
	for _, c := range changes {
		rr := &op.resp.Results[index[c.user]]
		if rr.ErrorCode != 0 {
			continue
		}
		if count[pair{c.user, c.mech}] > 1 {
			rr.ErrorCode = kerr.DuplicateResource.Code
			rr.ErrorMessage = strp("A user credential cannot be altered twice in the same " +
				"request")
			continue
		}
		rec, code, msg := ctl.planScram(c)
		if code != 0 {
			rr.ErrorCode, rr.ErrorMessage = code, strp(msg)
			continue
		}
		perUser[c.user] = append(perUser[c.user], rec)
	}
	var recs []meta.Record
	op.at = nil
	for i, rr := range op.resp.Results {
		if rr.ErrorCode != 0 {
			continue
		}
		for _, rec := range perUser[rr.User] {
			recs = append(recs, rec)
			op.at = append(op.at, i)
		}
	}
	ctl.proposeAll(op, recs) // then alterScramCommitted
}

// planScram validates one change and returns its record.
func (ctl *adminController) planScram(c scramChange) (meta.Record, int16, string) {
	mech := meta.ScramMechanism(c.mech)
	switch {
	case c.user == "":
		return meta.Record{}, kerr.UnacceptableCredential.Code, "Username must not be empty"
	case mech.String() == "":
		return meta.Record{}, kerr.UnsupportedSaslMechanism.Code,
			fmt.Sprintf("Unknown SCRAM mechanism %d", c.mech)
	}
	if c.del {
		if _, ok := ctl.image.ScramCredential(c.user, mech); !ok {
			return meta.Record{}, kerr.ResourceNotFound.Code,
				"Attempt to delete a user credential that does not exist"
		}
		return meta.Record{Kind: meta.KindScramCredentialDeleted, User: c.user,
			ScramMechanism: mech}, 0, ""
	}
	switch {
	case c.iterations < ScramMinIterations:
		return meta.Record{}, kerr.UnacceptableCredential.Code, fmt.Sprintf(
			"Too few iterations: %d (at least %d)", c.iterations, ScramMinIterations)
	case c.iterations > ScramMaxIterations:
		return meta.Record{}, kerr.UnacceptableCredential.Code, fmt.Sprintf(
			"Too many iterations: %d (at most %d)", c.iterations, ScramMaxIterations)
	case len(c.salt) == 0 || len(c.spw) == 0:
		return meta.Record{}, kerr.UnacceptableCredential.Code,
			"The salt and the salted password must not be empty"
	}
	stored, server := ScramKeys(mech, c.spw)
	return meta.Record{Kind: meta.KindScramCredentialSet, User: c.user,
		ScramMechanism: mech, Salt: c.salt, StoredKey: stored, ServerKey: server,
		Iterations: c.iterations}, 0, ""
}

// alterScramCommitted answers once every record was answered: a user whose record did
// not commit gets the commit's error.
func (ctl *adminController) alterScramCommitted(op *opAlterScram) {
	for j, err := range op.errs {
		if rr := &op.resp.Results[op.at[j]]; err != nil && rr.ErrorCode == 0 {
			code, msg := commitFailure(err)
			rr.ErrorCode, rr.ErrorMessage = code, strp(msg)
		}
	}
	ctl.reply(op.req, op.resp)
	ctl.adminFinished(op)
}
