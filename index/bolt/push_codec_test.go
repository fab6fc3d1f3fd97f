package bolt

import (
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

func FuzzChannelCodec(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "drive:0A", "res", int64(1900000000123456789))
	f.Add([]byte{}, "", "", int64(0))
	f.Fuzz(func(t *testing.T, digest []byte, feed, resource string, nanos int64) {
		in := fm.PushChannel{ID: "id", Feed: feed, ResourceID: resource}
		copy(in.TokenSHA256[:], digest)
		if nanos != 0 {
			in.Expiration = time.Unix(0, nanos).UTC()
		}
		out, err := decodeChannel("id", encodeChannel(&in))
		if err != nil || out != in {
			t.Fatalf("round trip: %+v → %+v, %v", in, out, err)
		}
		// Any byte string decodes to a value or an error, never a panic.
		_, _ = decodeChannel("id", []byte(feed))
	})
}
