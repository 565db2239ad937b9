package broker

// Envelope (key 58), version 0 (KIP-590): an admin change forwarded by another node.
//
// A quorum node that is not the active controller forwards CreateAcls, DeleteAcls,
// AlterClientQuotas, AlterUserScramCredentials, AlterConfigs and
// IncrementalAlterConfigs to the controller's node (admin_forward.go) in an Envelope:
// RequestData is the client's request with a Kafka request header (correlation id 0),
// RequestPrincipal the client's principal and ClientHostAddress its address, both as
// text (Sluice's own form: only Sluice nodes read them). The Envelope needs
// CLUSTER_ACTION on the cluster, which a node's inter-broker principal has (authorize.go):
// the forwarding node authorized the client; the request inside is not checked again.
//
//   - This node has no quorum or does not lead it → NOT_CONTROLLER (the forwarding
//     node answers its client NOT_CONTROLLER; the client retries).
//   - RequestData that does not decode, or a request of another API → INVALID_REQUEST.
//   - Otherwise the request runs as if its client had sent it here (the admin queue,
//     answered once its records committed) and its answer comes back in ResponseData
//     (a Kafka response header, correlation id 0, then the body). It is never
//     forwarded again, even if the leadership moves while it runs: its records then
//     fail to commit and its answer carries that retriable error.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// forwardable says whether key is an admin change a node forwards to the controller.
func forwardable(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.AlterClientQuotas,
		kmsg.AlterUserSCRAMCredentials, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs:
		return true
	}
	return false
}

func (b *Broker) handleEnvelope(r Request, m *kmsg.EnvelopeRequest) {
	resp := m.ResponseKind().(*kmsg.EnvelopeResponse)
	if b.ctlPort == nil || b.notController() {
		resp.ErrorCode = kerr.NotController.Code
		b.reply(r, resp)
		return
	}
	inner, clientID, err := decodeEnvelopeRequest(m.RequestData)
	if err != nil {
		b.lg.Warn("envelope refused", zap.Uint64("conn", r.Conn), zap.Error(err))
		resp.ErrorCode = kerr.InvalidRequest.Code
		b.reply(r, resp)
		return
	}
	fr := Request{Conn: r.Conn, ID: r.ID, ClientID: clientID, Msg: inner,
		Listener: r.Listener, Principal: string(m.RequestPrincipal),
		Host: string(m.ClientHostAddress), Forwarded: true}
	b.lg.Debug("forwarded admin request", zap.String("api", kmsg.NameForKey(inner.Key())),
		zap.String("principal", fr.Principal), zap.String("from", r.Principal))
	switch m := inner.(type) {
	case *kmsg.CreateACLsRequest:
		b.handleCreateACLs(fr, m)
	case *kmsg.DeleteACLsRequest:
		b.handleDeleteACLs(fr, m)
	case *kmsg.AlterClientQuotasRequest:
		b.handleAlterClientQuotas(fr, m)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		b.handleAlterUserScramCredentials(fr, m)
	case *kmsg.AlterConfigsRequest:
		b.handleAlterConfigs(fr, m)
	case *kmsg.IncrementalAlterConfigsRequest:
		b.handleIncrementalAlterConfigs(fr, m)
	default: // decodeEnvelopeRequest admits only forwardable keys
		panic(fmt.Sprintf("broker: envelope of %T admitted", m))
	}
}

// envelopeAnswer wraps the answer to a forwarded request (node.reply).
func envelopeAnswer(inner kmsg.Response) kmsg.Response {
	out := kmsg.NewPtrEnvelopeResponse()
	dst := kbin.AppendInt32(nil, 0) // correlation id
	if inner.IsFlexible() {
		dst = kbin.AppendUvarint(dst, 0) // no header tags
	}
	out.ResponseData = inner.AppendTo(dst)
	return out
}

// encodeEnvelopeRequest is req with a request header, as an Envelope carries it.
func encodeEnvelopeRequest(req kmsg.Request, clientID string) []byte {
	dst := kbin.AppendInt16(nil, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, 0) // correlation id
	dst = kbin.AppendNullableString(dst, &clientID)
	if req.IsFlexible() {
		dst = kbin.AppendUvarint(dst, 0) // no header tags
	}
	return req.AppendTo(dst)
}

// decodeEnvelopeRequest decodes an Envelope's RequestData: only the APIs a node
// forwards, at versions this node serves.
func decodeEnvelopeRequest(data []byte) (kmsg.Request, string, error) {
	rd := kbin.Reader{Src: data}
	key, version := rd.Int16(), rd.Int16()
	rd.Int32()
	cid := rd.NullableString()
	if !rd.Ok() {
		return nil, "", fmt.Errorf("truncated request header")
	}
	if !forwardable(key) {
		return nil, "", fmt.Errorf("API key %d is not forwarded", key)
	}
	vr, ok := VersionFor(key)
	if !ok || version < vr.Min || version > vr.Max {
		return nil, "", fmt.Errorf("%s v%d is not served", kmsg.NameForKey(key), version)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		if !rd.Ok() {
			return nil, "", fmt.Errorf("request header tags")
		}
	}
	if err := readBody(req, rd.Src); err != nil {
		return nil, "", fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	clientID := ""
	if cid != nil {
		clientID = *cid
	}
	return req, clientID, nil
}

// decodeEnvelopeResponse decodes an EnvelopeResponse's ResponseData as the answer to
// req.
func decodeEnvelopeResponse(req kmsg.Request, data []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rd := kbin.Reader{Src: data}
	rd.Int32()
	if resp.IsFlexible() {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if !rd.Ok() {
		return nil, fmt.Errorf("truncated response header")
	}
	if err := readBody(resp, rd.Src); err != nil {
		return nil, err
	}
	return resp, nil
}

// readBody decodes with kmsg; the recover keeps a malformed body from taking the node
// down (as the wire layer's decoder).
func readBody(m interface{ ReadFrom([]byte) error }, src []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panicked: %v", r)
		}
	}()
	return m.ReadFrom(src)
}
