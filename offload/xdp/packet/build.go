package packet

import "encoding/binary"

// Header sizes and limits of the frames Build writes.
const (
	// EthHeaderLen is the size of an untagged Ethernet II header.
	EthHeaderLen = 14
	// IPv4HeaderLen is the size of an IPv4 header without options.
	IPv4HeaderLen = 20
	// IPv6HeaderLen is the size of an IPv6 header (no extension header).
	IPv6HeaderLen = 40
	// UDPHeaderLen is the size of a UDP header.
	UDPHeaderLen = 8
	// HeaderLen is the size of all headers Build writes before the payload of an IPv4 frame.
	HeaderLen = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen
	// HeaderLen6 is the size of all headers Build writes before the payload of an IPv6 frame.
	HeaderLen6 = EthHeaderLen + IPv6HeaderLen + UDPHeaderLen
	// MaxPayload is the largest UDP payload an IPv4 packet can carry.
	MaxPayload = 0xffff - IPv4HeaderLen - UDPHeaderLen
	// MaxPayload6 is the largest UDP payload an IPv6 packet without a jumbo payload option
	// can carry.
	MaxPayload6 = 0xffff - UDPHeaderLen
	// FlowLabelMask is the 20 bits of the IPv6 flow label.
	FlowLabelMask = 0xfffff
)

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	protoUDP      = 17
	ipFlagDF      = 0x4000
	ipFlagMF      = 0x2000
	ipFragOffset  = 0x1fff
)

// Header is everything of an Ethernet + IPv4 or IPv6 + UDP frame but its payload: Build's input
// and Parse's output.
type Header struct {
	// DstMAC and SrcMAC are the Ethernet destination and source.
	DstMAC, SrcMAC MAC
	// IPv6 says the frame is IPv6: its addresses are Src6 and Dst6 (Src and Dst are unused), TOS
	// is its traffic class, TTL its hop limit, FlowLabel its flow label; ID and DontFragment are
	// unused, and the UDP checksum is always computed (NoChecksum is ignored by Build: IPv6
	// forbids a zero UDP checksum).
	IPv6 bool
	// Src and Dst are the IPv4 source and destination addresses.
	Src, Dst [4]byte
	// Src6 and Dst6 are the IPv6 source and destination addresses.
	Src6, Dst6 [16]byte
	// FlowLabel is the IPv6 flow label (20 bits; Build masks it).
	FlowLabel uint32
	// SrcPort and DstPort are the UDP ports.
	SrcPort, DstPort uint16
	// TOS is the IPv4 type-of-service byte (DSCP and ECN), or the IPv6 traffic class.
	TOS uint8
	// TTL is the IPv4 time to live or the IPv6 hop limit; Build writes it as given (0 included).
	TTL uint8
	// ID is the IPv4 identification field.
	ID uint16
	// DontFragment is the IPv4 DF flag.
	DontFragment bool
	// NoChecksum: Build leaves the UDP checksum 0 (none); Parse reports a frame whose UDP checksum
	// is 0 (and then verifies only the IPv4 header).
	NoChecksum bool
	// VLANTagged and VLAN (the 802.1Q tag control information: priority, DEI, VLAN id) are set by
	// Parse for a frame with one 802.1Q tag. Build ignores them and writes untagged frames.
	VLANTagged bool
	VLAN       uint16
}

// Build writes the frame carrying h and the payload (the concatenation of the slices of payload,
// total bytes in all) to the start of buf and returns its length. mtu is the IP MTU of the path
// (the largest IP packet, headers included, the link carries). An IPv4 header has no options;
// its checksum is computed, and so is the UDP checksum unless h.NoChecksum. An IPv6 header
// (h.IPv6) has no extension header and its UDP checksum is always computed.
//
// Errors (unwrapped, nothing written to buf that the caller may rely on): ErrTooBig when total
// exceeds MaxPayload (MaxPayload6), the IP packet exceeds mtu, or the frame exceeds len(buf) —
// send through the kernel; ErrBadLength when total is negative or not the payload's length.
// Build allocates nothing.
func Build(buf []byte, h *Header, payload [][]byte, total, mtu int) (int, error) {
	if total < 0 {
		return 0, ErrBadLength
	}
	hlen, ipHdr, maxPayload := HeaderLen, IPv4HeaderLen, MaxPayload
	if h.IPv6 {
		hlen, ipHdr, maxPayload = HeaderLen6, IPv6HeaderLen, MaxPayload6
	}
	if total > maxPayload || ipHdr+UDPHeaderLen+total > mtu || hlen+total > len(buf) {
		return 0, ErrTooBig
	}
	n := hlen + total
	data := buf[hlen:n]
	copied := 0
	for _, s := range payload {
		if len(s) > len(data)-copied {
			return 0, ErrBadLength
		}
		copied += copy(data[copied:], s)
	}
	if copied != total {
		return 0, ErrBadLength
	}
	if h.IPv6 {
		build6(buf[:n], h, total)
		return n, nil
	}

	putEth(buf, h, etherTypeIPv4)

	ip := buf[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]
	ip[0] = 0x45
	ip[1] = h.TOS
	binary.BigEndian.PutUint16(ip[2:4], uint16(IPv4HeaderLen+UDPHeaderLen+total))
	binary.BigEndian.PutUint16(ip[4:6], h.ID)
	var frag uint16
	if h.DontFragment {
		frag = ipFlagDF
	}
	binary.BigEndian.PutUint16(ip[6:8], frag)
	ip[8] = h.TTL
	ip[9] = protoUDP
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], h.Src[:])
	copy(ip[16:20], h.Dst[:])
	binary.BigEndian.PutUint16(ip[10:12], ^csumFold(csum(0, ip)))

	udpLen := UDPHeaderLen + total
	udp := buf[EthHeaderLen+IPv4HeaderLen : n]
	putUDP(udp, h, udpLen)
	if !h.NoChecksum {
		ck := ^csumFold(csum(pseudoSum(h.Src, h.Dst, udpLen), udp))
		if ck == 0 {
			ck = 0xffff // 0 means "no checksum" in UDP over IPv4
		}
		binary.BigEndian.PutUint16(udp[6:8], ck)
	}
	return n, nil
}

// putEth writes the Ethernet header of h's frame at the start of frame.
func putEth(frame []byte, h *Header, etherType uint16) {
	eth := frame[:EthHeaderLen]
	copy(eth[0:6], h.DstMAC[:])
	copy(eth[6:12], h.SrcMAC[:])
	binary.BigEndian.PutUint16(eth[12:14], etherType)
}

// putUDP writes h's UDP header for a datagram of udpLen bytes at the start of udp, its checksum 0
// (the caller's, per family).
func putUDP(udp []byte, h *Header, udpLen int) {
	binary.BigEndian.PutUint16(udp[0:2], h.SrcPort)
	binary.BigEndian.PutUint16(udp[2:4], h.DstPort)
	binary.BigEndian.PutUint16(udp[4:6], uint16(udpLen))
	udp[6], udp[7] = 0, 0
}

// build6 writes the Ethernet, IPv6 and UDP headers of a frame of n = HeaderLen6+total bytes whose
// payload is in place.
func build6(frame []byte, h *Header, total int) {
	putEth(frame, h, etherTypeIPv6)

	udpLen := UDPHeaderLen + total
	ip := frame[EthHeaderLen : EthHeaderLen+IPv6HeaderLen]
	binary.BigEndian.PutUint32(ip[0:4], 6<<28|uint32(h.TOS)<<20|h.FlowLabel&FlowLabelMask)
	binary.BigEndian.PutUint16(ip[4:6], uint16(udpLen))
	ip[6] = protoUDP
	ip[7] = h.TTL
	copy(ip[8:24], h.Src6[:])
	copy(ip[24:40], h.Dst6[:])

	udp := frame[EthHeaderLen+IPv6HeaderLen:]
	putUDP(udp, h, udpLen)
	ck := ^csumFold(csum(pseudoSum6(&h.Src6, &h.Dst6, udpLen), udp))
	if ck == 0 {
		ck = 0xffff // RFC 8200: a computed 0 is sent as all ones (0 is invalid)
	}
	binary.BigEndian.PutUint16(udp[6:8], ck)
}
