package broker

// CreateAcls (key 30), versions 0–3.
//
// Adds ACL bindings to the replicated metadata. One result per creation, in request
// order: a binding that cannot be stored (an ANY or UNKNOWN type, pattern, operation or
// permission; MATCH; an empty name or host; a principal not of the form Type:name; a
// cluster resource not named kafka-cluster) → INVALID_REQUEST with the reason,
// the others are created. The new bindings go in one ACLsCreated record, run through
// the admin queue like every metadata change and answered once committed, so that a
// client answered "created" is refused or allowed by this node from then on; the other
// nodes from when they apply the record. A binding that exists already is answered
// without a record. More than maxACLsPerRequest (10,000) creations → every one
// INVALID_REQUEST, nothing written (acls.go). Needs ALTER on the cluster (authorize.go); without an authorizer
// every creation is answered SECURITY_DISABLED, as in Kafka (acls.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/meta"
)

// opCreateACLs is a CreateAcls request; proposed lists the results the record answers.
type opCreateACLs struct {
	adminBase
	m        *kmsg.CreateACLsRequest
	resp     *kmsg.CreateACLsResponse
	proposed []int
}

func (ctl *adminController) handleCreateACLs(r Request, m *kmsg.CreateACLsRequest) {
	if ctl.refuseWithoutAuthorizer(r) || ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	ctl.serialize(&opCreateACLs{adminBase: adminBase{req: r}, m: m})
}

// createACLs checks every creation and proposes the new bindings.
func (ctl *adminController) createACLs(op *opCreateACLs) {
	op.resp = op.m.ResponseKind().(*kmsg.CreateACLsResponse)
	var add []acl.Binding
	seen := map[acl.Binding]bool{}
	for i, c := range op.m.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		b, err := creationBinding(op.m.Version, c)
		switch {
		case err != nil:
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, strp(err.Error())
		case !ctl.image.ACLs().Has(b):
			op.proposed = append(op.proposed, i)
			if !seen[b] {
				seen[b] = true
				add = append(add, b)
			}
		}
		op.resp.Results = append(op.resp.Results, res)
	}
	if len(op.m.Creations) > maxACLsPerRequest {
		for i := range op.resp.Results {
			op.resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
			op.resp.Results[i].ErrorMessage = tooManyACLs("would create", len(op.m.Creations))
		}
		add, op.proposed = nil, nil
	}
	var recs []meta.Record
	if len(add) > 0 {
		recs = []meta.Record{{Kind: meta.KindACLsCreated, ACLs: add}}
		ctl.lg.Info("creating ACLs", aclsField(add))
	}
	ctl.proposeAll(op, recs) // then createACLsCommitted
}

func (ctl *adminController) createACLsCommitted(op *opCreateACLs) {
	if len(op.errs) == 1 && op.errs[0] != nil {
		code, msg := commitFailure(op.errs[0])
		for _, i := range op.proposed {
			op.resp.Results[i].ErrorCode, op.resp.Results[i].ErrorMessage = code, strp(msg)
		}
	}
	ctl.reply(op.req, op.resp)
	ctl.adminFinished(op)
}
