package packet

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary frames to Parse: it must not panic, must fail only with its sentinel
// errors, and an accepted frame must give a payload aliasing the frame that Build turns back into
// a frame Parse reads identically. Seeds: testdata/fuzz/FuzzParse and the frames below.
// Run: go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./offload/xdp/packet
func FuzzParse(f *testing.F) {
	base := validFrame(f)
	f.Add(base, true)
	f.Add(withVLAN(base, 5), false)
	f.Add(withIPOptions(base, []byte{1, 1, 1, 0}), true)
	f.Add(base[:20], true)
	buf := make([]byte, HeaderLen+MaxPayload)
	f.Fuzz(func(t *testing.T, frame []byte, verify bool) {
		var h Header
		v := VerifyNone
		if verify {
			v = VerifyAll
		}
		p, err := Parse(frame, &h, v)
		if err != nil {
			if p != nil {
				t.Fatalf("error %v with a payload", err)
			}
			for _, e := range []error{ErrTruncated, ErrMalformed, ErrNotUDP, ErrFragment, ErrChecksum} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if len(p) > len(frame)-HeaderLen || cap(p) != len(p) {
			t.Fatalf("payload %d bytes (cap %d) from a %d-byte frame", len(p), cap(p), len(frame))
		}
		if len(p) > 0 {
			off := len(frame) - len(p)
			for off >= 0 && &frame[off] != &p[0] {
				off--
			}
			if off < HeaderLen {
				t.Fatalf("payload does not alias the frame after the headers")
			}
		}
		n, err := Build(buf, &h, [][]byte{p}, len(p), 0xffff)
		if err != nil {
			t.Fatalf("Build of a parsed datagram: %v", err)
		}
		var again Header
		q, err := Parse(buf[:n], &again, VerifyAll)
		if err != nil {
			t.Fatalf("Parse of the rebuilt frame: %v", err)
		}
		h.VLANTagged, h.VLAN = false, 0
		if again != h || !bytes.Equal(p, q) {
			t.Fatalf("rebuilt frame differs: %+v %q vs %+v %q", again, q, h, p)
		}
	})
}
