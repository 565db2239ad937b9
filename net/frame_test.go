package net

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseHeaderNullClientIDAndTags(t *testing.T) {
	body := []byte{0, 3, 0, 12, 0, 0, 0, 9, 0xff, 0xff, // Metadata v12, corr 9, null id
		2, 1, 2, 0xaa, 0xbb, 5, 0, // two tagged fields, then the body starts
		0x42}
	h, rest, err := parseHeader(body, "")
	require.NoError(t, err)
	require.Equal(t, header{key: 3, version: 12, corr: 9}, h)
	rest, err = skipTags(rest)
	require.NoError(t, err)
	require.Equal(t, []byte{0x42}, rest)
}

func TestParseHeaderRejectsBadClientIDLength(t *testing.T) {
	_, _, err := parseHeader([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 5, 'a'}, "")
	require.Error(t, err)
	_, _, err = parseHeader([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}, "")
	require.Error(t, err)
}

func TestSkipTagsRejectsOverlongTag(t *testing.T) {
	_, err := skipTags([]byte{1, 0, 10, 1, 2})
	require.Error(t, err)
	_, err = skipTags([]byte{0xff, 0xff, 0xff, 0xff, 0xff})
	require.Error(t, err)
}

func TestReadBodyGrowsLargeBodies(t *testing.T) {
	want := bytes.Repeat([]byte{7}, 3*bigBodyStep+5)
	got, err := readBody(bytes.NewReader(want), len(want))
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = readBody(bytes.NewReader(want[:bigBodyStep+1]), len(want))
	require.Error(t, err, "a short body is an error, not a partial request")
}

func TestFIFOFindAcrossWrap(t *testing.T) {
	q := newFIFO(4)
	q.ring = make([]slot, 4) // start at full size so that the ids wrap around
	for id := uint64(1); id <= 3; id++ {
		q.push(slot{id: id})
	}
	q.at(0).done, q.at(1).done = true, true
	popped, _ := q.popDone(nil)
	require.Len(t, popped, 2)
	for id := uint64(4); id <= 6; id++ { // wraps around the ring
		q.push(slot{id: id * 10})
	}
	require.True(t, q.full())
	for _, id := range []uint64{3, 40, 50, 60} {
		require.NotNil(t, q.find(id))
		require.Equal(t, id, q.find(id).id)
	}
	require.Nil(t, q.find(4))
	require.Nil(t, q.find(1))
	require.False(t, q.headDone())
}

func TestFIFOGrowsKeepingOrder(t *testing.T) {
	q := newFIFO(100)
	q.push(slot{id: 1})
	q.push(slot{id: 2})
	q.at(0).done = true
	popped, _ := q.popDone(nil)
	require.Len(t, popped, 1)
	for id := uint64(3); id <= 100; id++ { // grows several times from a moved head
		require.False(t, q.full())
		q.push(slot{id: id})
	}
	require.False(t, q.full())
	q.push(slot{id: 101})
	require.True(t, q.full())
	require.Len(t, q.ring, 100)
	for i := range q.n {
		require.Equal(t, uint64(i+2), q.at(i).id)
	}
	require.NotNil(t, q.find(57))
}

// FuzzDecodeRequest feeds arbitrary request bodies (after the size prefix) through the
// header parser and the kmsg decoder. Nothing may panic, and whatever decodes must
// re-encode to something that decodes to the same encoding.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range []kmsg.Request{
		metadataReq(1), metadataReq(12), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(),
		kmsg.NewPtrCreateTopicsRequest(), kmsg.NewPtrApiVersionsRequest(),
	} {
		if req.GetVersion() == 0 && req.Key() != 3 {
			req.SetVersion(req.MaxVersion() - 1)
		}
		f.Add(frame(1, req)[4:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, rest, err := parseHeader(body, "")
		if err != nil {
			return
		}
		req, err := decodeRequest(h, rest)
		if err != nil {
			return
		}
		enc := req.AppendTo(nil)
		again := kmsg.RequestForKey(h.key)
		again.SetVersion(h.version)
		require.NoError(t, again.ReadFrom(enc))
		require.Equal(t, enc, again.AppendTo(nil))
	})
}
