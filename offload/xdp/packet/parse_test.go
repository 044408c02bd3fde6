package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// validFrame builds a frame with a 5-byte payload "hello" for the parse tests.
func validFrame(t testing.TB) []byte {
	t.Helper()
	h := Header{
		DstMAC: MAC{2, 0, 0, 0, 0, 2}, SrcMAC: MAC{2, 0, 0, 0, 0, 1},
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 4000, DstPort: 5000, TTL: 64,
	}
	buf := make([]byte, 64)
	n, err := Build(buf, &h, [][]byte{[]byte("hello")}, 5, 1500)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return buf[:n]
}

// fixIPChecksum recomputes the IPv4 header checksum of a frame whose IPv4 header starts at off.
func fixIPChecksum(f []byte, off int) {
	ihl := int(f[off]&0xf) * 4
	f[off+10], f[off+11] = 0, 0
	binary.BigEndian.PutUint16(f[off+10:], ^refChecksum(f[off:off+ihl]))
}

// withVLAN inserts an 802.1Q tag with tci after the MAC addresses.
func withVLAN(f []byte, tci uint16) []byte {
	out := append([]byte{}, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, etherTypeVLAN)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, f[12:]...)
}

// withIPOptions inserts opts (a multiple of 4 bytes) into the IPv4 header and fixes IHL, total
// length and the header checksum (the UDP checksum does not cover IPv4 options).
func withIPOptions(f []byte, opts []byte) []byte {
	out := append([]byte{}, f[:34]...)
	out = append(out, opts...)
	out = append(out, f[34:]...)
	out[14] = 0x40 | byte((20+len(opts))/4)
	binary.BigEndian.PutUint16(out[16:], binary.BigEndian.Uint16(f[16:])+uint16(len(opts)))
	fixIPChecksum(out, 14)
	return out
}

func TestParseAccepts(t *testing.T) {
	base := validFrame(t)
	padded := append(append([]byte{}, base...), make([]byte, 13)...) // Ethernet padding to 60
	trimmed := append([]byte{}, base...)                             // UDP length 12 < IP payload 13
	binary.BigEndian.PutUint16(trimmed[38:], 12)
	trimmed[40], trimmed[41] = 0, 0
	cases := []struct {
		name    string
		frame   []byte
		verify  Verify
		payload string
		vlan    bool
	}{
		{"plain", base, VerifyAll, "hello", false},
		{"padded", padded, VerifyAll, "hello", false},
		{"vlan", withVLAN(base, 0x2005), VerifyAll, "hello", true},
		{"options", withIPOptions(base, []byte{1, 1, 1, 0}), VerifyAll, "hello", false},
		{"max options", withIPOptions(base, bytes.Repeat([]byte{1}, 40)), VerifyAll, "hello", false},
		{"vlan options", withVLAN(withIPOptions(base, []byte{1, 1, 1, 0}), 7), VerifyAll, "hello", true},
		{"udp length trims", trimmed, VerifyAll, "hell", false},
	}
	for _, c := range cases {
		var h Header
		p, err := Parse(c.frame, &h, c.verify)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(p) != c.payload || h.SrcPort != 4000 || h.DstPort != 5000 ||
			h.Src != [4]byte{10, 0, 0, 1} || h.Dst != [4]byte{10, 0, 0, 2} || h.VLANTagged != c.vlan {
			t.Errorf("%s: payload %q header %+v", c.name, p, h)
		}
		if c.vlan && c.name == "vlan" && h.VLAN != 0x2005 {
			t.Errorf("%s: VLAN %#x", c.name, h.VLAN)
		}
	}
}

func TestParseRejects(t *testing.T) {
	base := validFrame(t)
	mut := func(f func(b []byte)) []byte {
		b := append([]byte{}, base...)
		f(b)
		return b
	}
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrTruncated},
		{"13 bytes", base[:13], ErrTruncated},
		{"ethernet only", base[:14], ErrTruncated},
		{"vlan tag cut", withVLAN(base, 1)[:17], ErrTruncated},
		{"ip header cut", base[:33], ErrTruncated},
		{"arp", mut(func(b []byte) { b[12], b[13] = 0x08, 0x06 }), ErrNotUDP},
		{"IPv4 packet in an IPv6 EtherType", mut(func(b []byte) { b[12], b[13] = 0x86, 0xdd }), ErrTruncated},
		{"double vlan", withVLAN(withVLAN(base, 1), 2), ErrNotUDP},
		{"tcp", mut(func(b []byte) { b[23] = 6; fixIPChecksum(b, 14) }), ErrNotUDP},
		{"version 6 in ipv4", mut(func(b []byte) { b[14] = 0x65 }), ErrMalformed},
		{"ihl 4", mut(func(b []byte) { b[14] = 0x44 }), ErrMalformed},
		{"ihl 0", mut(func(b []byte) { b[14] = 0x40 }), ErrMalformed},
		{"ihl beyond frame", mut(func(b []byte) { b[14] = 0x4f }), ErrTruncated},
		{"total below ihl", mut(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 19) }), ErrMalformed},
		{"total beyond frame", mut(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 34) }), ErrTruncated},
		{"frame cut in payload", base[:len(base)-1], ErrTruncated},
		{"no room for udp", mut(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 27); fixIPChecksum(b, 14) }), ErrTruncated},
		{"more fragments", mut(func(b []byte) { b[20] |= 0x20; fixIPChecksum(b, 14) }), ErrFragment},
		{"fragment offset", mut(func(b []byte) { b[21] = 1; fixIPChecksum(b, 14) }), ErrFragment},
		{"udp length 7", mut(func(b []byte) { binary.BigEndian.PutUint16(b[38:], 7) }), ErrMalformed},
		{"udp length above ip", mut(func(b []byte) { binary.BigEndian.PutUint16(b[38:], 14) }), ErrMalformed},
		{"ip checksum", mut(func(b []byte) { b[22]-- }), ErrChecksum},
		{"udp checksum", mut(func(b []byte) { b[42] ^= 1 }), ErrChecksum},
		{"udp checksum field", mut(func(b []byte) { b[41] ^= 1 }), ErrChecksum},
	}
	for _, c := range cases {
		var h Header
		p, err := Parse(c.frame, &h, VerifyAll)
		if !errors.Is(err, c.want) || p != nil {
			t.Errorf("%s: Parse = %q, %v; want %v", c.name, p, err, c.want)
		}
	}
	// Without verification, corrupted checksums pass.
	var h Header
	bad := mut(func(b []byte) { b[22]--; b[42] ^= 1 })
	if p, err := Parse(bad, &h, VerifyNone); err != nil || string(p) != "iello" {
		t.Errorf("unverified Parse = %q, %v", p, err)
	}
	// A zero UDP checksum is "none": verification skips it, the header says so.
	none := mut(func(b []byte) { b[40], b[41], b[42] = 0, 0, 'j' })
	if p, err := Parse(none, &h, VerifyAll); err != nil || string(p) != "jello" || !h.NoChecksum {
		t.Errorf("no-checksum Parse = %q, %v, NoChecksum %v", p, err, h.NoChecksum)
	}
}
