package meta

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawQuotaRecord draws a ClientQuotaAltered record over a few entities and keys (or,
// rarely, a malformed one, which must be refused).
func drawQuotaRecord(t *rapid.T) Record {
	name := func(label string) QuotaName {
		switch rapid.IntRange(0, 3).Draw(t, label) {
		case 0:
			return QuotaName{}
		case 1:
			return DefaultName()
		default:
			return Named(rapid.SampledFrom([]string{"alice", "bob", ""}).Draw(t, label+"n"))
		}
	}
	e := QuotaEntity{User: name("user"), ClientID: name("client")}
	var ops []QuotaOp
	for range rapid.IntRange(0, 3).Draw(t, "ops") {
		ops = append(ops, QuotaOp{
			Key:    rapid.SampledFrom([]string{"producer_byte_rate", "consumer_byte_rate"}).Draw(t, "key"),
			Value:  rapid.SampledFrom([]float64{-1, 0, 1024, 1.5e6}).Draw(t, "value"),
			Remove: rapid.Bool().Draw(t, "remove")})
	}
	return Record{Kind: KindClientQuotaAltered, QuotaEntity: e, QuotaOps: ops}
}

func TestClientQuotaRecordsApplyInOrderAndSnapshot(t *testing.T) {
	im := NewImage()
	alice := QuotaEntity{User: Named("alice")}
	defClient := QuotaEntity{ClientID: DefaultName()}
	both := QuotaEntity{User: Named("alice"), ClientID: Named("app")}
	for _, r := range []Record{
		{Kind: KindClientQuotaAltered, QuotaEntity: alice, QuotaOps: []QuotaOp{
			{Key: "producer_byte_rate", Value: 1024}, {Key: "consumer_byte_rate", Value: 2048}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: defClient, QuotaOps: []QuotaOp{
			{Key: "producer_byte_rate", Value: 10}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: both, QuotaOps: []QuotaOp{
			{Key: "request_percentage", Value: 50}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: alice, QuotaOps: []QuotaOp{
			{Key: "consumer_byte_rate", Remove: true}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: both, QuotaOps: []QuotaOp{
			{Key: "request_percentage", Remove: true}}},
	} {
		require.NoError(t, im.Apply(r))
	}
	v, ok := im.Quota(alice, "producer_byte_rate")
	require.True(t, ok)
	require.Equal(t, 1024.0, v)
	_, ok = im.Quota(alice, "consumer_byte_rate")
	require.False(t, ok, "removed")
	qs := im.ClientQuotas()
	require.Len(t, qs, 2, "an entity left without values is forgotten")
	require.Equal(t, alice, qs[0].Entity, "users sort before client ids")
	require.Equal(t, defClient, qs[1].Entity)

	enc, err := json.Marshal(im.Snapshot())
	require.NoError(t, err)
	var recs []Record
	require.NoError(t, json.Unmarshal(enc, &recs))
	again := NewImage()
	for _, r := range recs {
		require.NoError(t, again.Apply(r))
	}
	require.True(t, im.Equal(again))
	require.NoError(t, again.Apply(Record{Kind: KindClientQuotaAltered, QuotaEntity: alice,
		QuotaOps: []QuotaOp{{Key: "producer_byte_rate", Value: 1}}}))
	require.False(t, im.Equal(again), "a changed value makes the images differ")
}

func TestClientQuotaRecordsAreChecked(t *testing.T) {
	im := NewImage()
	for _, r := range []Record{
		{Kind: KindClientQuotaAltered, QuotaOps: []QuotaOp{{Key: "producer_byte_rate", Value: 1}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: QuotaEntity{User: Named("")},
			QuotaOps: []QuotaOp{{Key: "producer_byte_rate", Value: 1}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: QuotaEntity{User: Named("a")}},
		{Kind: KindClientQuotaAltered, QuotaEntity: QuotaEntity{User: Named("a")},
			QuotaOps: []QuotaOp{{Key: "producer_byte_rate", Value: -1}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: QuotaEntity{User: Named("a")},
			QuotaOps: []QuotaOp{{Key: "producer_byte_rate", Value: math.Inf(1)}}},
		{Kind: KindClientQuotaAltered, QuotaEntity: QuotaEntity{User: Named("a")},
			QuotaOps: []QuotaOp{{Key: "", Value: 1}}},
	} {
		require.Error(t, im.Apply(r), "%+v", r)
	}
	require.False(t, im.HasQuotas())
}

func TestOldRecordsDoNotCarryQuotaFields(t *testing.T) {
	enc, err := json.Marshal(Record{Kind: KindTopicDeleted, Topic: "t"})
	require.NoError(t, err)
	require.NotContains(t, string(enc), "quota")
}
