package broker

// AlterClientQuotas (key 49), versions 0–1 (KIP-546).
//
// Sets or removes quota values of user, client-id and user+client-id entities (a null
// name is the type's <default>). Keys: producer_byte_rate, consumer_byte_rate (whole
// bytes per second) and request_percentage (stored, not enforced: quotas.go). Per
// entry, answered in request order; any error leaves that entity unchanged:
//   - an empty entity, an unknown or repeated entity type, an empty name, an ip entity
//     → INVALID_REQUEST;
//   - an unknown key, a key named twice, a negative, non-finite or (byte rates)
//     fractional value → INVALID_REQUEST with the reason;
//   - the same entity twice in the request → INVALID_REQUEST for each.
//
// Each changed entity gets one ClientQuotaAltered record with its ops (setting a value
// it already has, or removing one it does not have, changes nothing), run through the
// admin queue like every metadata change and answered once committed; every node
// enforces the quota from the record's MetaApplied on. ValidateOnly only checks.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// opAlterQuotas is an AlterClientQuotas request; at[j] is recs[j]'s entry in
// resp.Entries.
type opAlterQuotas struct {
	adminBase
	m    *kmsg.AlterClientQuotasRequest
	resp *kmsg.AlterClientQuotasResponse
	at   []int
}

func (ctl *adminController) handleAlterClientQuotas(r Request, m *kmsg.AlterClientQuotasRequest) {
	if ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	ctl.serialize(&opAlterQuotas{adminBase: adminBase{req: r}, m: m})
}

// alterQuotas checks every entry against the image and proposes the records of the
// changed entities; alterQuotasCommitted answers.
func (ctl *adminController) alterQuotas(op *opAlterQuotas) {
	op.resp = op.m.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	entities := make([]meta.QuotaEntity, len(op.m.Entries))
	codes := make([]int16, len(op.m.Entries))
	msgs := make([]string, len(op.m.Entries))
	count := map[meta.QuotaEntity]int{}
	for i, entry := range op.m.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range entry.Entity {
			we := kmsg.NewAlterClientQuotasResponseEntryEntity()
			we.Type, we.Name = p.Type, p.Name
			re.Entity = append(re.Entity, we)
		}
		op.resp.Entries = append(op.resp.Entries, re)
		parts := make([]entityPart, len(entry.Entity))
		for j, p := range entry.Entity {
			parts[j] = entityPart{typ: p.Type, name: p.Name}
		}
		entities[i], codes[i], msgs[i] = parseQuotaEntity(parts)
		if codes[i] == 0 {
			count[entities[i]]++
		}
	}
	var recs []meta.Record
	for i, entry := range op.m.Entries {
		code, msg := codes[i], msgs[i]
		var rec meta.Record
		changed := false
		if code == 0 && count[entities[i]] > 1 {
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("Entity %s is named more "+
				"than once in the request", entities[i])
		}
		if code == 0 {
			rec, changed, code, msg = ctl.planQuota(entities[i], entry.Ops)
		}
		if code != 0 {
			op.resp.Entries[i].ErrorCode, op.resp.Entries[i].ErrorMessage = code, strp(msg)
			continue
		}
		if changed && !op.m.ValidateOnly {
			recs = append(recs, rec)
			op.at = append(op.at, i)
		}
	}
	ctl.proposeAll(op, recs) // then alterQuotasCommitted
}

// planQuota validates one entity's ops against its current values and returns the
// record of what changes.
func (ctl *adminController) planQuota(e meta.QuotaEntity,
	ops []kmsg.AlterClientQuotasRequestEntryOp) (meta.Record, bool, int16, string) {
	seen := map[string]bool{}
	var out []meta.QuotaOp
	for _, op := range ops {
		if seen[op.Key] {
			return meta.Record{}, false, kerr.InvalidRequest.Code, fmt.Sprintf(
				"Duplicate quota key %s not updating quota for this entity %s", op.Key, e)
		}
		seen[op.Key] = true
		if code, msg := checkQuotaValue(op.Key, op.Value, op.Remove); code != 0 {
			return meta.Record{}, false, code, msg
		}
		cur, has := ctl.image.Quota(e, op.Key)
		switch {
		case op.Remove && has:
			out = append(out, meta.QuotaOp{Key: op.Key, Remove: true})
		case !op.Remove && (!has || cur != op.Value):
			out = append(out, meta.QuotaOp{Key: op.Key, Value: op.Value})
		}
	}
	rec := meta.Record{Kind: meta.KindClientQuotaAltered, QuotaEntity: e, QuotaOps: out}
	return rec, len(out) > 0, 0, ""
}

// alterQuotasCommitted answers once every record was answered.
func (ctl *adminController) alterQuotasCommitted(op *opAlterQuotas) {
	for j, err := range op.errs {
		if err != nil {
			code, msg := commitFailure(err)
			e := &op.resp.Entries[op.at[j]]
			e.ErrorCode, e.ErrorMessage = code, strp(msg)
		}
	}
	ctl.reply(op.req, op.resp)
	ctl.adminFinished(op)
}
