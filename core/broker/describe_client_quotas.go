package broker

// DescribeClientQuotas (key 48), versions 0–1 (KIP-546).
//
// Lists the quota entities of the image that match the filter, with their values, as
// Kafka's quota image answers:
//   - each component names an entity type (user, client-id or ip) at most once and
//     matches it exactly (MatchType 0, Match the name), as its default (1, Match null)
//     or with any name, the default included (2, Match null);
//   - an entity matches when it has every component's type as the component says;
//     with Strict it must have no other type. No component and not Strict: every
//     entity. No ip entity exists (AlterClientQuotas refuses them), so ip filters
//     match nothing;
//   - a malformed filter (empty or repeated type, Match given or missing against the
//     match type, an unknown match type, ip mixed with user or client-id) →
//     INVALID_REQUEST with the reason; an unknown type → UNSUPPORTED_VERSION, as
//     Kafka answers.
//
// Entries come sorted by user, then client id (the default first); values by key. A
// read of this node's image: it never waits.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// quotaFilter is a parsed DescribeClientQuotas filter: the types matched exactly (a
// nil name: the default) and those matched with any name.
type quotaFilter struct {
	exact  map[string]*string
	anyOf  map[string]bool
	strict bool
}

func (n *node) handleDescribeClientQuotas(
	m *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := m.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	f, code, msg := parseQuotaFilter(m)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, strp(msg)
		return resp
	}
	for _, q := range n.image.ClientQuotas() {
		if !f.matches(q.Entity) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range wireEntity(q.Entity) {
			we := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			we.Type, we.Name = p.typ, p.name
			entry.Entity = append(entry.Entity, we)
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

func parseQuotaFilter(m *kmsg.DescribeClientQuotasRequest) (quotaFilter, int16, string) {
	f := quotaFilter{exact: map[string]*string{}, anyOf: map[string]bool{}, strict: m.Strict}
	bad := func(msg string) (quotaFilter, int16, string) {
		return quotaFilter{}, kerr.InvalidRequest.Code, msg
	}
	for _, c := range m.Components {
		_, dup := f.exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return bad("Invalid empty entity type.")
		case dup || f.anyOf[c.EntityType]:
			return bad(fmt.Sprintf("Entity type %s cannot appear more than once in the "+
				"filter.", c.EntityType))
		case c.EntityType != quotaTypeUser && c.EntityType != quotaTypeClientID &&
			c.EntityType != quotaTypeIP:
			return quotaFilter{}, kerr.UnsupportedVersion.Code,
				"Unsupported entity type " + c.EntityType
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return bad("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return bad("Request specified MATCH_TYPE_DEFAULT, but also specified a " +
					"match string.")
			}
			f.exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return bad("Request specified MATCH_TYPE_SPECIFIED, but also specified a " +
					"match string.")
			}
			f.anyOf[c.EntityType] = true
		default:
			return bad(fmt.Sprintf("Unknown match type %d", c.MatchType))
		}
	}
	_, ipExact := f.exact[quotaTypeIP]
	_, userExact := f.exact[quotaTypeUser]
	_, cliExact := f.exact[quotaTypeClientID]
	if (ipExact || f.anyOf[quotaTypeIP]) && (userExact || cliExact ||
		f.anyOf[quotaTypeUser] || f.anyOf[quotaTypeClientID]) {
		return bad("Invalid entity filter component combination. IP filter component " +
			"should not be used with user or clientId filter component.")
	}
	return f, 0, ""
}

// matches says whether an entity passes the filter.
func (f quotaFilter) matches(e meta.QuotaEntity) bool {
	parts := map[string]meta.QuotaName{}
	if e.User.Set {
		parts[quotaTypeUser] = e.User
	}
	if e.ClientID.Set {
		parts[quotaTypeClientID] = e.ClientID
	}
	if f.strict && len(parts) != len(f.exact)+len(f.anyOf) {
		return false
	}
	for typ, name := range f.exact {
		have, ok := parts[typ]
		if !ok {
			return false
		}
		if name == nil && !have.Default || name != nil && (have.Default || have.Name != *name) {
			return false
		}
	}
	for typ := range f.anyOf {
		if _, ok := parts[typ]; !ok {
			return false
		}
	}
	return true
}
