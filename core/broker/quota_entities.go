package broker

// What DescribeClientQuotas and AlterClientQuotas share: quota entities on the wire
// (a list of type and name, a null name meaning the type's default) and the quota keys.

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/meta"
)

// entityPart is one component of a quota entity as a request names it.
type entityPart struct {
	typ  string
	name *string // nil: the default
}

// quotaName is a part's name in the image's terms.
func (p entityPart) quotaName() meta.QuotaName {
	if p.name == nil {
		return meta.DefaultName()
	}
	return meta.Named(*p.name)
}

// parseQuotaEntity checks an AlterClientQuotas entity: user, client-id or both, each
// once, no empty name (Kafka's checks and messages). ip entities are refused: Sluice
// bounds connections per address with max.connections.per.ip instead.
func parseQuotaEntity(parts []entityPart) (meta.QuotaEntity, int16, string) {
	var e meta.QuotaEntity
	if len(parts) == 0 {
		return e, kerr.InvalidRequest.Code, "Invalid empty client quota entity"
	}
	for _, p := range parts {
		var dst *meta.QuotaName
		switch p.typ {
		case quotaTypeUser:
			dst = &e.User
		case quotaTypeClientID:
			dst = &e.ClientID
		case quotaTypeIP:
			return e, kerr.InvalidRequest.Code, "ip quotas (connection_creation_rate) are " +
				"not supported: bound connections per address with max.connections.per.ip"
		default:
			return e, kerr.InvalidRequest.Code, "Unhandled client quota entity type: " + p.typ
		}
		if dst.Set {
			return e, kerr.InvalidRequest.Code,
				"Invalid client quota entity, duplicate entity entry " + p.typ
		}
		if p.name != nil && *p.name == "" {
			return e, kerr.InvalidRequest.Code, "Empty " + p.typ + " not supported"
		}
		*dst = p.quotaName()
	}
	return e, 0, ""
}

// checkQuotaValue checks one key and the value an AlterClientQuotas op sets.
// producer_byte_rate and consumer_byte_rate are whole bytes per second (Kafka's LONG
// keys); request_percentage a percentage of one thread's time (DOUBLE).
func checkQuotaValue(key string, v float64, remove bool) (int16, string) {
	switch key {
	case keyProducerByteRate, keyConsumerByteRate, keyRequestPercentage:
	case "controller_mutation_rate":
		return kerr.InvalidRequest.Code, "controller_mutation_rate quotas are not " +
			"supported: sluice.controller.mutation.rate bounds topic creation node-wide"
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid configuration key %s: the "+
			"client quota keys are %s, %s and %s", key, keyProducerByteRate,
			keyConsumerByteRate, keyRequestPercentage)
	}
	if remove {
		return 0, ""
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return kerr.InvalidRequest.Code, fmt.Sprintf("Configuration %s must be a finite "+
			"number", key)
	case v < 0:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Configuration %s must not be "+
			"negative: %v", key, v)
	case key != keyRequestPercentage && math.Abs(v-math.Round(v)) > 1e-6:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Configuration %s must be a Long "+
			"value: %v", key, v)
	}
	return 0, ""
}

// wireEntity is an image entity as the responses list it: user first, then client-id.
func wireEntity(e meta.QuotaEntity) []entityPart {
	var out []entityPart
	add := func(typ string, n meta.QuotaName) {
		if !n.Set {
			return
		}
		p := entityPart{typ: typ}
		if !n.Default {
			name := n.Name
			p.name = &name
		}
		out = append(out, p)
	}
	add(quotaTypeUser, e.User)
	add(quotaTypeClientID, e.ClientID)
	return out
}
