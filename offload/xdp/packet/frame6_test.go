package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// randomHeader6 is a random IPv6 header (the IPv4-only fields zero, as Parse leaves them).
func randomHeader6(r *rand.Rand) Header {
	h := Header{IPv6: true, TOS: uint8(r.Uint32()), TTL: uint8(r.Uint32()), FlowLabel: r.Uint32() & FlowLabelMask,
		SrcPort: uint16(r.Uint32()), DstPort: uint16(r.Uint32())}
	for i := range h.DstMAC {
		h.DstMAC[i], h.SrcMAC[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	for i := range h.Src6 {
		h.Src6[i], h.Dst6[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	return h
}

// gopacketFrame6 is the frame gopacket serializes for h and payload, checksums computed by it.
func gopacketFrame6(t *testing.T, h *Header, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(h.SrcMAC[:]), DstMAC: net.HardwareAddr(h.DstMAC[:]),
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, TrafficClass: h.TOS, FlowLabel: h.FlowLabel, NextHeader: layers.IPProtocolUDP,
		HopLimit: h.TTL, SrcIP: net.IP(h.Src6[:]), DstIP: net.IP(h.Dst6[:])}
	udp := &layers.UDP{SrcPort: layers.UDPPort(h.SrcPort), DstPort: layers.UDPPort(h.DstPort)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatalf("gopacket serialize: %v", err)
	}
	return buf.Bytes()
}

// TestBuild6AgainstGopacket: an IPv6 frame Build writes is byte for byte the one gopacket
// serializes with its own checksum, for random headers, payload sizes and iovec splits; gopacket
// decodes it to the same fields; Parse reads both back with verification.
func TestBuild6AgainstGopacket(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	buf := make([]byte, HeaderLen6+MaxPayload6)
	for i := range 500 {
		h := randomHeader6(r)
		size := r.IntN(1500)
		if i%100 == 0 {
			size = MaxPayload6 - r.IntN(3)
		}
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		var iov [][]byte
		for rest := payload; len(rest) > 0; {
			k := 1 + r.IntN(len(rest))
			iov = append(iov, rest[:k])
			rest = rest[k:]
		}
		n, err := Build(buf, &h, iov, size, 0xffff+IPv6HeaderLen)
		if err != nil {
			t.Fatalf("Build %d bytes: %v", size, err)
		}
		if n != HeaderLen6+size {
			t.Fatalf("Build length %d, want %d", n, HeaderLen6+size)
		}
		want := gopacketFrame6(t, &h, payload)
		ck := binary.BigEndian.Uint16(buf[HeaderLen6-2:])
		wantCk := binary.BigEndian.Uint16(want[HeaderLen6-2:])
		if wantCk == 0 {
			wantCk = 0xffff // gopacket leaves a computed 0 as 0; RFC 8200 sends all ones
			binary.BigEndian.PutUint16(want[HeaderLen6-2:], wantCk)
		}
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("frame %d (%d bytes): checksum %#04x, gopacket %#04x; headers\n got %x\nwant %x",
				i, size, ck, wantCk, buf[:HeaderLen6], want[:HeaderLen6])
		}
		pk := gopacket.NewPacket(buf[:n], layers.LayerTypeEthernet, gopacket.Default)
		ip6, _ := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		udp, _ := pk.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip6 == nil || udp == nil || ip6.TrafficClass != h.TOS || ip6.FlowLabel != h.FlowLabel ||
			ip6.HopLimit != h.TTL || !ip6.SrcIP.Equal(h.Src6[:]) || !ip6.DstIP.Equal(h.Dst6[:]) ||
			int(ip6.Length) != UDPHeaderLen+size || uint16(udp.SrcPort) != h.SrcPort || uint16(udp.DstPort) != h.DstPort ||
			!bytes.Equal(udp.Payload, payload) {
			t.Fatalf("gopacket decodes %v", pk)
		}
		var got Header
		p, err := Parse(buf[:n], &got, VerifyAll)
		if err != nil {
			t.Fatalf("Parse(Build(%+v)): %v", h, err)
		}
		if got != h || !bytes.Equal(p, payload) {
			t.Fatalf("round trip: header\n got %+v\nwant %+v", got, h)
		}
		if size > 0 && &p[0] != &buf[HeaderLen6] {
			t.Fatalf("payload does not alias the frame")
		}
	}
}

// TestParse6Checks: a zero UDP checksum is invalid over IPv6 (dropped whatever the verification);
// a wrong one fails verification; the pseudo-header sum a local sender leaves for offload passes
// VerifyLocal only; extension headers and fragments are the kernel's; lengths are checked.
func TestParse6Checks(t *testing.T) {
	h := Header{IPv6: true, TTL: 64, SrcPort: 1000, DstPort: 2000,
		Src6: [16]byte{0xfd, 0, 15: 1}, Dst6: [16]byte{0xfd, 0, 15: 2}}
	buf := make([]byte, 200)
	n, err := Build(buf, &h, [][]byte{[]byte("hello")}, 5, 1500)
	if err != nil {
		t.Fatal(err)
	}
	good := append([]byte{}, buf[:n]...)
	ckOff := HeaderLen6 - 2
	mod := func(f func(b []byte)) []byte { b := append([]byte{}, good...); f(b); return b }
	zero := mod(func(b []byte) { b[ckOff], b[ckOff+1] = 0, 0 })
	wrong := mod(func(b []byte) { b[ckOff] ^= 0x10 })
	partial := mod(func(b []byte) {
		binary.BigEndian.PutUint16(b[ckOff:], csumFold(pseudoSum6(&h.Src6, &h.Dst6, UDPHeaderLen+5)))
	})
	cases := []struct {
		name  string
		frame []byte
		v     Verify
		want  error
	}{
		{"good, no verification", good, VerifyNone, nil},
		{"good, verified", good, VerifyAll, nil},
		{"good, verified locally", good, VerifyLocal, nil},
		{"zero checksum, no verification", zero, VerifyNone, ErrChecksum},
		{"zero checksum, verified", zero, VerifyLocal, ErrChecksum},
		{"wrong checksum, no verification", wrong, VerifyNone, nil},
		{"wrong checksum, verified", wrong, VerifyAll, ErrChecksum},
		{"wrong checksum, verified locally", wrong, VerifyLocal, ErrChecksum},
		{"checksum left to offload, verified", partial, VerifyAll, ErrChecksum},
		{"checksum left to offload, verified locally", partial, VerifyLocal, nil},
		{"fragment header", mod(func(b []byte) { b[EthHeaderLen+6] = 44 }), VerifyNone, ErrFragment},
		{"hop-by-hop options", mod(func(b []byte) { b[EthHeaderLen+6] = 0 }), VerifyNone, ErrNotUDP},
		{"ICMPv6", mod(func(b []byte) { b[EthHeaderLen+6] = 58 }), VerifyNone, ErrNotUDP},
		{"version 4", mod(func(b []byte) { b[EthHeaderLen] = 0x40 }), VerifyNone, ErrMalformed},
		{"payload length 0 (jumbogram)", mod(func(b []byte) { b[EthHeaderLen+4], b[EthHeaderLen+5] = 0, 0 }), VerifyNone, ErrMalformed},
		{"payload length past the frame", mod(func(b []byte) { b[EthHeaderLen+5] += 1 }), VerifyNone, ErrTruncated},
		{"UDP length past the payload", mod(func(b []byte) { b[HeaderLen6-3] += 1 }), VerifyNone, ErrMalformed},
		{"truncated header", good[:EthHeaderLen+39], VerifyNone, ErrTruncated},
	}
	for _, c := range cases {
		var got Header
		p, err := Parse(c.frame, &got, c.v)
		if !errors.Is(err, c.want) || c.want != nil && err == nil {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if err == nil && (string(p) != "hello" || !got.IPv6 || got.Src6 != h.Src6 || got.DstPort != 2000) {
			t.Errorf("%s: %+v %q", c.name, got, p)
		}
	}
	// A frame gopacket makes with a hop-by-hop extension header goes to the kernel.
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolIPv6HopByHop, HopLimit: 1,
		SrcIP: net.IP(h.Src6[:]), DstIP: net.IP(h.Dst6[:])}
	hbh := &layers.IPv6HopByHop{}
	hbh.NextHeader = layers.IPProtocolUDP
	hbh.Options = append(hbh.Options, &layers.IPv6HopByHopOption{OptionType: 1, OptionLength: 4, OptionData: make([]byte, 4)})
	udp := &layers.UDP{SrcPort: 1000, DstPort: 2000}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	sb := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, hbh, udp, gopacket.Payload("x")); err != nil {
		t.Fatal(err)
	}
	var got Header
	if _, err := Parse(sb.Bytes(), &got, VerifyAll); !errors.Is(err, ErrNotUDP) {
		t.Errorf("hop-by-hop header from gopacket: %v, want ErrNotUDP", err)
	}
}

// TestBuild6Errors: IPv6 size limits (the packet against the MTU, the payload against the
// 16-bit payload length).
func TestBuild6Errors(t *testing.T) {
	h := Header{IPv6: true, TTL: 1}
	buf := make([]byte, HeaderLen6+MaxPayload6+1)
	p := make([]byte, 1452)
	if _, err := Build(buf, &h, [][]byte{p}, len(p), 1500); err != nil {
		t.Errorf("1452 bytes in a 1500-byte MTU: %v", err)
	}
	if _, err := Build(buf, &h, [][]byte{p, {0}}, len(p)+1, 1500); !errors.Is(err, ErrTooBig) {
		t.Errorf("1453 bytes in a 1500-byte MTU: %v, want ErrTooBig", err)
	}
	big := make([]byte, MaxPayload6+1)
	if _, err := Build(buf, &h, [][]byte{big}, len(big), 1<<20); !errors.Is(err, ErrTooBig) {
		t.Errorf("payload over MaxPayload6: %v, want ErrTooBig", err)
	}
	if _, err := Build(buf[:HeaderLen6+3], &h, [][]byte{p[:4]}, 4, 1500); !errors.Is(err, ErrTooBig) {
		t.Errorf("frame over the buffer: %v, want ErrTooBig", err)
	}
}
