package packet

import "encoding/binary"

// Header sizes and limits of the frames Build writes.
const (
	// EthHeaderLen is the size of an untagged Ethernet II header.
	EthHeaderLen = 14
	// IPv4HeaderLen is the size of an IPv4 header without options.
	IPv4HeaderLen = 20
	// UDPHeaderLen is the size of a UDP header.
	UDPHeaderLen = 8
	// HeaderLen is the size of all headers Build writes before the payload.
	HeaderLen = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen
	// MaxPayload is the largest UDP payload an IPv4 packet can carry.
	MaxPayload = 0xffff - IPv4HeaderLen - UDPHeaderLen
)

const (
	etherTypeIPv4 = 0x0800
	etherTypeVLAN = 0x8100
	protoUDP      = 17
	ipFlagDF      = 0x4000
	ipFlagMF      = 0x2000
	ipFragOffset  = 0x1fff
)

// Header is everything of an Ethernet + IPv4 + UDP frame but its payload: Build's input and
// Parse's output.
type Header struct {
	// DstMAC and SrcMAC are the Ethernet destination and source.
	DstMAC, SrcMAC MAC
	// Src and Dst are the IPv4 source and destination addresses.
	Src, Dst [4]byte
	// SrcPort and DstPort are the UDP ports.
	SrcPort, DstPort uint16
	// TOS is the IPv4 type-of-service byte (DSCP and ECN).
	TOS uint8
	// TTL is the IPv4 time to live; Build writes it as given (0 included).
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
// total bytes in all) to the start of buf and returns its length. mtu is the IPv4 MTU of the path
// (the largest IPv4 packet, headers included, the link carries). The IPv4 header has no options;
// its checksum is computed, and so is the UDP checksum unless h.NoChecksum.
//
// Errors (unwrapped, nothing written to buf that the caller may rely on): ErrTooBig when total
// exceeds MaxPayload, the IPv4 packet exceeds mtu, or the frame exceeds len(buf) — send through
// the kernel; ErrBadLength when total is negative or not the payload's length.
// Build allocates nothing.
func Build(buf []byte, h *Header, payload [][]byte, total, mtu int) (int, error) {
	if total < 0 {
		return 0, ErrBadLength
	}
	if total > MaxPayload || IPv4HeaderLen+UDPHeaderLen+total > mtu || HeaderLen+total > len(buf) {
		return 0, ErrTooBig
	}
	n := HeaderLen + total
	data := buf[HeaderLen:n]
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

	eth := buf[:EthHeaderLen]
	copy(eth[0:6], h.DstMAC[:])
	copy(eth[6:12], h.SrcMAC[:])
	binary.BigEndian.PutUint16(eth[12:14], etherTypeIPv4)

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
	binary.BigEndian.PutUint16(udp[0:2], h.SrcPort)
	binary.BigEndian.PutUint16(udp[2:4], h.DstPort)
	binary.BigEndian.PutUint16(udp[4:6], uint16(udpLen))
	udp[6], udp[7] = 0, 0
	if !h.NoChecksum {
		ck := ^csumFold(csum(pseudoSum(h.Src, h.Dst, udpLen), udp))
		if ck == 0 {
			ck = 0xffff // 0 means "no checksum" in UDP over IPv4
		}
		binary.BigEndian.PutUint16(udp[6:8], ck)
	}
	return n, nil
}
