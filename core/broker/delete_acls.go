package broker

// DeleteAcls (key 31), versions 0–3.
//
// Removes the bindings each filter matches (acl.Filter, as DescribeAcls, on this
// node's image when the request runs). One result per filter, in request order, listing
// the bindings it matched; a filter with an UNKNOWN value → INVALID_REQUEST. Every
// matched binding goes in one ACLsDeleted record, run through the admin queue and
// answered once committed: a client answered "deleted" is refused by this node from
// then on. A binding created after the request ran is not deleted by it. Filters that
// match more than maxACLsPerRequest (10,000) bindings together → every filter
// INVALID_REQUEST, nothing deleted (acls.go). Needs ALTER
// on the cluster (authorize.go); without an authorizer every filter is answered
// SECURITY_DISABLED, as in Kafka (acls.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/meta"
)

// opDeleteACLs is a DeleteAcls request.
type opDeleteACLs struct {
	adminBase
	m    *kmsg.DeleteACLsRequest
	resp *kmsg.DeleteACLsResponse
}

func (ctl *adminController) handleDeleteACLs(r Request, m *kmsg.DeleteACLsRequest) {
	if ctl.refuseWithoutAuthorizer(r) || ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	ctl.serialize(&opDeleteACLs{adminBase: adminBase{req: r}, m: m})
}

// deleteACLs matches every filter and proposes the removal of what they matched.
func (ctl *adminController) deleteACLs(op *opDeleteACLs) {
	op.resp = op.m.ResponseKind().(*kmsg.DeleteACLsResponse)
	var del []acl.Binding
	seen := map[acl.Binding]bool{}
	for _, wf := range op.m.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := deleteFilter(op.m.Version, wf)
		if err := f.Check(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, strp(err.Error())
			op.resp.Results = append(op.resp.Results, res)
			continue
		}
		for _, b := range ctl.image.ACLs().Select(f) {
			res.MatchingACLs = append(res.MatchingACLs, matchingACL(b))
			if !seen[b] {
				seen[b] = true
				del = append(del, b)
			}
		}
		op.resp.Results = append(op.resp.Results, res)
	}
	if len(del) > maxACLsPerRequest {
		for i := range op.resp.Results {
			r := &op.resp.Results[i]
			if r.ErrorCode == 0 {
				r.ErrorCode, r.MatchingACLs = kerr.InvalidRequest.Code, nil
				r.ErrorMessage = tooManyACLs("would delete", len(del))
			}
		}
		del = nil
	}
	var recs []meta.Record
	if len(del) > 0 {
		recs = []meta.Record{{Kind: meta.KindACLsDeleted, ACLs: del}}
		ctl.lg.Info("deleting ACLs", aclsField(del))
	}
	ctl.proposeAll(op, recs) // then deleteACLsCommitted
}

func matchingACL(b acl.Binding) kmsg.DeleteACLsResponseResultMatchingACL {
	a := kmsg.NewDeleteACLsResponseResultMatchingACL()
	a.ResourceType, a.ResourceName = kmsg.ACLResourceType(b.Type), b.Name
	a.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern)
	a.Principal, a.Host = b.Principal, b.Host
	a.Operation, a.PermissionType = kmsg.ACLOperation(b.Operation),
		kmsg.ACLPermissionType(b.Permission)
	return a
}

func (ctl *adminController) deleteACLsCommitted(op *opDeleteACLs) {
	if len(op.errs) == 1 && op.errs[0] != nil {
		code, msg := commitFailure(op.errs[0])
		for i := range op.resp.Results {
			r := &op.resp.Results[i]
			if r.ErrorCode == 0 && len(r.MatchingACLs) > 0 {
				r.ErrorCode, r.ErrorMessage, r.MatchingACLs = code, strp(msg), nil
			}
		}
	}
	ctl.reply(op.req, op.resp)
	ctl.adminFinished(op)
}
