package net

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// advertised is the ApiVersions key list, built once from broker.AdvertisedVersions
// (the client APIs and the inter-broker ones). Responses share it read-only.
var advertised = func() []kmsg.ApiVersionsResponseApiKey {
	all := broker.AdvertisedVersions()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(all))
	for _, v := range all {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		keys = append(keys, k)
	}
	return keys
}()

// apiVersions answers ApiVersions in the server: it is the first request of every
// connection and needs nothing from the node. A version above ours gets a v0 response
// with UNSUPPORTED_VERSION and our key list (its body is not parsed: we cannot know its
// layout), after which clients retry at a version we listed.
func (c *conn) apiVersions(h header, rest []byte, bytes int) bool {
	vr, _ := broker.VersionFor(int16(kmsg.ApiVersions))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = advertised
	switch {
	case h.version > vr.Max:
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case h.version < vr.Min:
		c.lg.Warn("closing connection: ApiVersions version not served",
			zap.Int16("version", h.version), zap.Int32("correlation_id", h.corr))
		return false
	default:
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(h.version)
		if err := decodeBody(req, rest); err != nil {
			c.lg.Warn("closing connection: malformed ApiVersions request",
				zap.Int16("version", h.version), zap.Int32("correlation_id", h.corr), zap.Error(err))
			return false
		}
		resp.SetVersion(h.version)
	}
	c.answer(h, bytes, resp)
	return true
}

// produceUnsupported answers Produce v0–v2 (message sets from before record batches)
// with UNSUPPORTED_VERSION for every partition. The versions stay advertised because old
// librdkafka only enables compression when it sees them (kafka-compat.md). acks=0 gets
// no response, as for any acks=0 produce.
func produceUnsupported(req *kmsg.ProduceRequest) kmsg.Response {
	if req.Acks == 0 {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.GetVersion())
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.UnsupportedVersion.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
