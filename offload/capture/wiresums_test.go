package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestWireSums: a received frame whose UDP checksum is only begun (as a veth peer hands it
// over) is captured with the finished checksum, IPv4 or IPv6; a frame with a good checksum, no
// checksum, or that is not IP UDP is captured as it is, and the ring's frame is never written.
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

	good6 := make([]byte, UDP6HdrLen+len(payload))
	putUDP(good6, UDP6HdrLen, netip.MustParseAddrPort("[fd00::2]:4000"), netip.MustParseAddrPort("[fd00::1]:7010"), len(payload), 0)
	copy(good6[UDP6HdrLen:], payload)
	l4Checksum(good6, UDP6HdrLen, [][]byte{payload}, 0, len(payload))
	if got := wireSums(good6, fixed[:]); &got[0] != &good6[0] {
		t.Fatal("an IPv6 frame with a good checksum was copied")
	}
	partial6 := bytes.Clone(good6)
	binary.BigEndian.PutUint16(partial6[UDP6HdrLen-2:], 0x4321)
	ring6 := bytes.Clone(partial6)
	if got := wireSums(partial6, fixed[:]); !bytes.Equal(got, good6) {
		t.Fatalf("IPv6 partial checksum not finished: %x, want %x", got[UDP6HdrLen-2:UDP6HdrLen], good6[UDP6HdrLen-2:UDP6HdrLen])
	}
	if !bytes.Equal(partial6, ring6) {
		t.Fatal("the ring's IPv6 frame was written")
	}
	ext6 := bytes.Clone(partial6)
	ext6[EthLen+6] = 0 // a hop-by-hop options header: the UDP header is not where it looks
	if got := wireSums(ext6, fixed[:]); &got[0] != &ext6[0] {
		t.Fatal("an IPv6 frame with an extension header was changed")
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
