package meta

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// QuotaName is one part of a client quota entity (KIP-546): absent (Set false), a
// name, or the default of its type (Kafka's null name, shown as "<default>").
type QuotaName struct {
	Set     bool   `json:"set,omitempty"`
	Default bool   `json:"default,omitempty"`
	Name    string `json:"name,omitempty"`
}

// Named is the QuotaName of one name; DefaultName the default's.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultName is the default entity of a type ("<default>").
func DefaultName() QuotaName { return QuotaName{Set: true, Default: true} }

// String is the name, "<default>", or "" when absent.
func (n QuotaName) String() string {
	switch {
	case !n.Set:
		return ""
	case n.Default:
		return "<default>"
	default:
		return n.Name
	}
}

// QuotaEntity is who a client quota applies to: a user, a client id, or a user's
// client id; each part a name or its type's default. It is comparable (a map key).
type QuotaEntity struct {
	User     QuotaName `json:"user,omitzero"`
	ClientID QuotaName `json:"client_id,omitzero"`
}

// String is "user=alice,client-id=<default>" style.
func (e QuotaEntity) String() string {
	s := ""
	if e.User.Set {
		s = "user=" + e.User.String()
	}
	if e.ClientID.Set {
		if s != "" {
			s += ","
		}
		s += "client-id=" + e.ClientID.String()
	}
	return s
}

// check says whether the entity can hold quotas: at least one part, no empty name.
func (e QuotaEntity) check() error {
	if !e.User.Set && !e.ClientID.Set {
		return fmt.Errorf("empty client quota entity")
	}
	for _, n := range []QuotaName{e.User, e.ClientID} {
		if n.Set && !n.Default && n.Name == "" {
			return fmt.Errorf("client quota entity %q has an empty name", e.String())
		}
		if !n.Set && (n.Default || n.Name != "") {
			return fmt.Errorf("client quota entity %q has a part not set", e.String())
		}
	}
	return nil
}

// QuotaOp sets one quota key of an entity to Value, or removes it.
type QuotaOp struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

// ClientQuota is one entity and its quota values, by key.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// applyQuota applies a ClientQuotaAltered record: its ops in order. An entity left
// without values is forgotten. Values must be finite and not negative; which keys exist
// is the broker's business (it validates before proposing).
func (im *Image) applyQuota(r Record) error {
	if err := r.QuotaEntity.check(); err != nil {
		return err
	}
	if len(r.QuotaOps) == 0 {
		return fmt.Errorf("client quota record for %s changes nothing", r.QuotaEntity)
	}
	for _, op := range r.QuotaOps {
		if op.Key == "" {
			return fmt.Errorf("client quota record for %s has an empty key", r.QuotaEntity)
		}
		if !op.Remove && (op.Value < 0 || math.IsNaN(op.Value) || math.IsInf(op.Value, 0)) {
			return fmt.Errorf("client quota %s=%v for %s is not a finite non-negative "+
				"number", op.Key, op.Value, r.QuotaEntity)
		}
	}
	vals := im.quotas[r.QuotaEntity]
	if vals == nil {
		vals = map[string]float64{}
	}
	for _, op := range r.QuotaOps {
		if op.Remove {
			delete(vals, op.Key)
		} else {
			vals[op.Key] = op.Value
		}
	}
	if len(vals) == 0 {
		delete(im.quotas, r.QuotaEntity)
	} else {
		im.quotas[r.QuotaEntity] = vals
	}
	im.quotaVersion++
	return nil
}

// Quota returns one entity's value for key, if set.
func (im *Image) Quota(e QuotaEntity, key string) (float64, bool) {
	v, ok := im.quotas[e][key]
	return v, ok
}

// HasQuotas says whether any client quota is set.
func (im *Image) HasQuotas() bool { return len(im.quotas) > 0 }

// QuotaVersion changes whenever a client quota changes (for caches of resolutions).
func (im *Image) QuotaVersion() uint64 { return im.quotaVersion }

// ClientQuotas returns every entity with quotas and a copy of its values, sorted by
// entity (by user, then client id: entityLess).
func (im *Image) ClientQuotas() []ClientQuota {
	out := make([]ClientQuota, 0, len(im.quotas))
	for e, vals := range im.quotas {
		cp := make(map[string]float64, len(vals))
		for k, v := range vals {
			cp[k] = v
		}
		out = append(out, ClientQuota{Entity: e, Values: cp})
	}
	sort.Slice(out, func(i, j int) bool { return entityLess(out[i].Entity, out[j].Entity) })
	return out
}

func entityLess(a, b QuotaEntity) bool {
	if c := nameCompare(a.User, b.User, false); c != 0 {
		return c < 0
	}
	return nameCompare(a.ClientID, b.ClientID, true) < 0
}

// nameCompare orders the default before names, and absent parts last (users) or first
// (client ids): user=a comes before user=a,client-id=x, which comes before client-id=x.
func nameCompare(a, b QuotaName, absentFirst bool) int {
	rank := func(n QuotaName) int {
		switch {
		case !n.Set && absentFirst:
			return -1
		case !n.Set:
			return 2
		case n.Default:
			return 0
		default:
			return 1
		}
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a.Name, b.Name)
}

// quotaSnapshot is one ClientQuotaAltered record per entity, its keys set in order.
func (im *Image) quotaSnapshot() []Record {
	var out []Record
	for _, q := range im.ClientQuotas() {
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ops := make([]QuotaOp, len(keys))
		for i, k := range keys {
			ops[i] = QuotaOp{Key: k, Value: q.Values[k]}
		}
		out = append(out, Record{Kind: KindClientQuotaAltered, QuotaEntity: q.Entity,
			QuotaOps: ops})
	}
	return out
}
