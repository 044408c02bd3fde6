package capture

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestIPv6Frames: datagrams and segments between IPv6 addresses get IPv6 headers with valid
// checksums; between v4-mapped addresses (a dual-stack socket talking IPv4) IPv4 headers with the
// IPv4 addresses, as the wire carries them; a mixed pair (no wire carries it) is not recorded.
func TestIPv6Frames(t *testing.T) {
	seg, _ := attachTest(t, Spec{Sockets: 16})
	s6, d6 := netip.MustParseAddrPort("[::1]:4000"), netip.MustParseAddrPort("[::1]:9999")
	sm, dm := netip.MustParseAddrPort("[::ffff:127.0.0.1]:4001"), netip.MustParseAddrPort("[::ffff:127.0.0.2]:9998")
	payload := [][]byte{[]byte("hel"), []byte("lo, v6")}
	UDP(ShmUDP, Out, 5, 0, s6, d6, payload, 9)
	TCP(ShmTCP, Out, 6, 0, s6, d6, 1000, 2000, payload, 9)
	UDP(ShmUDP, In, 7, 0, sm, dm, payload, 9)
	UDP(ShmUDP, Out, 8, 0, src, d6, payload, 9) // IPv4 to IPv6: not a packet
	recs := drain(t, seg)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		p := gopacket.NewPacket(r.Data, layers.LayerTypeEthernet, gopacket.Default)
		if p.ErrorLayer() != nil {
			t.Fatalf("record %d: %v", i, p.ErrorLayer().Error())
		}
		var srcIP, dstIP string
		if i < 2 {
			ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			if ip == nil || ip.HopLimit != 64 {
				t.Fatalf("record %d: not IPv6 with hop limit 64: %v", i, p)
			}
			srcIP, dstIP = ip.SrcIP.String(), ip.DstIP.String()
		} else {
			ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if ip == nil {
				t.Fatalf("record %d: a v4-mapped pair is not IPv4: %v", i, p)
			}
			srcIP, dstIP = ip.SrcIP.String(), ip.DstIP.String()
		}
		want := [][2]string{{"::1", "::1"}, {"::1", "::1"}, {"127.0.0.1", "127.0.0.2"}}[i]
		if srcIP != want[0] || dstIP != want[1] {
			t.Fatalf("record %d: %s > %s, want %s > %s", i, srcIP, dstIP, want[0], want[1])
		}
		if app := p.ApplicationLayer(); app == nil || !bytes.Equal(app.Payload(), []byte("hello, v6")) {
			t.Fatalf("record %d: payload %v", i, app)
		}
		// The transport checksum verifies over the pseudo-header of the frame's family.
		hdr := map[int]int{0: UDP6HdrLen, 1: TCP6HdrLen, 2: UDPHdrLen}[i]
		l4 := r.Data[EthLen+ipLen(hdr):]
		proto := uint8(17)
		if i == 1 {
			proto = 6
		}
		if fold(pseudo(r.Data, hdr, proto, len(l4))+sum(0, l4)) != 0xffff {
			t.Fatalf("record %d: bad transport checksum", i)
		}
	}
}
