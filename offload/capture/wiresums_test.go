package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestWireSums: a received frame whose UDP checksum is only begun (as a veth peer hands it
// over) is captured with the finished checksum; a frame with a good checksum, no checksum, or
// that is not IPv4 UDP is captured as it is, and the ring's frame is never written.
func TestWireSums(t *testing.T) {
	payload := []byte("hello, wire")
	good := make([]byte, UDPHdrLen+len(payload))
	putUDP(good, UDPHdrLen, netip.MustParseAddrPort("10.0.0.2:4000"), netip.MustParseAddrPort("10.0.0.1:7010"), len(payload), 1)
	copy(good[UDPHdrLen:], payload)
	l4Checksum(good, UDPHdrLen, [][]byte{payload}, 0, len(payload))
	var fixed scratch

	if got := wireSums(good, fixed[:]); &got[0] != &good[0] {
		t.Fatal("a frame with a good checksum was copied")
	}
	partial := bytes.Clone(good)
	binary.BigEndian.PutUint16(partial[udpSumEnd-2:], 0x1234) // what CHECKSUM_PARTIAL leaves
	ring := bytes.Clone(partial)
	got := wireSums(partial, fixed[:])
	if !bytes.Equal(got, good) {
		t.Fatalf("partial checksum not finished: %x, want %x", got[udpSumEnd-2:udpSumEnd], good[udpSumEnd-2:udpSumEnd])
	}
	if !bytes.Equal(partial, ring) {
		t.Fatal("the ring's frame was written")
	}
	none := bytes.Clone(good)
	none[udpSumEnd-2], none[udpSumEnd-1] = 0, 0
	if got := wireSums(none, fixed[:]); &got[0] != &none[0] {
		t.Fatal("a datagram without a checksum was changed")
	}
	notIP := bytes.Clone(partial)
	binary.BigEndian.PutUint16(notIP[12:], 0x86dd)
	if got := wireSums(notIP, fixed[:]); &got[0] != &notIP[0] {
		t.Fatal("a frame that is not IPv4 was changed")
	}
	short := partial[:UDPHdrLen-1]
	if got := wireSums(short, fixed[:]); len(got) != len(short) {
		t.Fatal("a short frame was changed")
	}
	bad := bytes.Clone(partial)
	binary.BigEndian.PutUint16(bad[EthLen+IPLen+4:], 4000) // a UDP length past the frame
	if got := wireSums(bad, fixed[:]); &got[0] != &bad[0] {
		t.Fatal("a frame with a bad UDP length was changed")
	}
}
