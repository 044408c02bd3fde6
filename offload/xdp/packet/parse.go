package packet

import "encoding/binary"

// Verify says which checksums Parse checks.
type Verify uint8

const (
	// VerifyNone checks no checksum (but an IPv6 UDP checksum of 0, which is always invalid).
	VerifyNone Verify = iota
	// VerifyAll checks the IPv4 header checksum and the UDP checksum (unless it is 0 over IPv4).
	// It rejects frames whose sender left the UDP checksum to offload and whose device never
	// filled it in: a kernel socket sending over veth (or any device with transmit checksum
	// offload seen before the NIC) leaves only the pseudo-header sum (CHECKSUM_PARTIAL). Use it
	// for frames that come from a real wire.
	VerifyAll
	// VerifyLocal is VerifyAll that also accepts a UDP checksum field holding the pseudo-header
	// sum a sender of this host leaves for offload (veth between namespaces), as the kernel
	// trusts such packets.
	VerifyLocal
)

// Parse reads the Ethernet + IPv4 or IPv6 + UDP frame in frame into h and returns the UDP
// payload, a slice of frame (capacity limited to its length). The frame may carry one 802.1Q tag,
// IPv4 options (skipped) and trailing bytes after the IP packet (Ethernet padding, ignored); a UDP
// length shorter than the IP payload trims the datagram, as the kernel does. v says which
// checksums are checked (Verify). An IPv6 packet is parsed only without extension headers: a
// fragment header gives ErrFragment, another next header ErrNotUDP.
//
// Errors (unwrapped; h is then partly written and meaningless): ErrNotUDP, ErrFragment (hand the
// frame to the kernel); ErrTruncated, ErrMalformed, ErrChecksum (drop it). Parse allocates nothing.
func Parse(frame []byte, h *Header, v Verify) ([]byte, error) {
	verify := v != VerifyNone
	if len(frame) < EthHeaderLen {
		return nil, ErrTruncated
	}
	copy(h.DstMAC[:], frame[0:6])
	copy(h.SrcMAC[:], frame[6:12])
	etherType := binary.BigEndian.Uint16(frame[12:14])
	off := EthHeaderLen
	h.VLANTagged, h.VLAN = false, 0
	if etherType == etherTypeVLAN {
		if len(frame) < EthHeaderLen+4 {
			return nil, ErrTruncated
		}
		h.VLANTagged = true
		h.VLAN = binary.BigEndian.Uint16(frame[14:16])
		etherType = binary.BigEndian.Uint16(frame[16:18])
		off += 4
	}
	h.IPv6 = false
	if etherType == etherTypeIPv6 {
		return parse6(frame[off:], h, v)
	}
	if etherType != etherTypeIPv4 {
		return nil, ErrNotUDP
	}

	ip := frame[off:]
	if len(ip) < IPv4HeaderLen {
		return nil, ErrTruncated
	}
	if ip[0]>>4 != 4 {
		return nil, ErrMalformed
	}
	ihl := int(ip[0]&0x0f) * 4
	if ihl < IPv4HeaderLen {
		return nil, ErrMalformed
	}
	if len(ip) < ihl {
		return nil, ErrTruncated
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if total < ihl {
		return nil, ErrMalformed
	}
	if total > len(ip) {
		return nil, ErrTruncated
	}
	if ip[9] != protoUDP {
		return nil, ErrNotUDP
	}
	frag := binary.BigEndian.Uint16(ip[6:8])
	if frag&(ipFlagMF|ipFragOffset) != 0 {
		return nil, ErrFragment
	}
	if verify && csumFold(csum(0, ip[:ihl])) != 0xffff {
		return nil, ErrChecksum
	}
	udp, err := udpDatagram(ip[ihl:total], h)
	if err != nil {
		return nil, err
	}
	udpLen := len(udp)

	h.TOS = ip[1]
	h.ID = binary.BigEndian.Uint16(ip[4:6])
	h.DontFragment = frag&ipFlagDF != 0
	h.TTL = ip[8]
	copy(h.Src[:], ip[12:16])
	copy(h.Dst[:], ip[16:20])
	if verify && !h.NoChecksum && !checksumOK(pseudoSum(h.Src, h.Dst, udpLen), udp, v) {
		return nil, ErrChecksum
	}
	return udp[UDPHeaderLen:udpLen:udpLen], nil
}

// udpDatagram is the UDP datagram at the start of seg (an IP packet's payload) trimmed to the
// length its header gives, with h's ports and NoChecksum read from it: the same for both families.
func udpDatagram(seg []byte, h *Header) ([]byte, error) {
	if len(seg) < UDPHeaderLen {
		return nil, ErrTruncated
	}
	l := int(binary.BigEndian.Uint16(seg[4:6]))
	if l < UDPHeaderLen || l > len(seg) {
		return nil, ErrMalformed
	}
	udp := seg[:l]
	h.SrcPort = binary.BigEndian.Uint16(udp[0:2])
	h.DstPort = binary.BigEndian.Uint16(udp[2:4])
	h.NoChecksum = udp[6] == 0 && udp[7] == 0
	return udp, nil
}

// ipProtoFragment is the IPv6 fragment header's next-header value.
const ipProtoFragment = 44

// parse6 reads the IPv6 + UDP packet ip (the rest of the frame after the Ethernet header) into h.
func parse6(ip []byte, h *Header, v Verify) ([]byte, error) {
	if len(ip) < IPv6HeaderLen {
		return nil, ErrTruncated
	}
	w := binary.BigEndian.Uint32(ip[0:4])
	if w>>28 != 6 {
		return nil, ErrMalformed
	}
	switch ip[6] {
	case protoUDP:
	case ipProtoFragment:
		return nil, ErrFragment
	default:
		return nil, ErrNotUDP
	}
	plen := int(binary.BigEndian.Uint16(ip[4:6]))
	if plen == 0 {
		return nil, ErrMalformed // a jumbogram announces itself in a hop-by-hop option
	}
	if IPv6HeaderLen+plen > len(ip) {
		return nil, ErrTruncated
	}
	udp, err := udpDatagram(ip[IPv6HeaderLen:IPv6HeaderLen+plen], h)
	if err != nil {
		return nil, err
	}
	udpLen := len(udp)
	h.IPv6 = true
	h.TOS = uint8(w >> 20)
	h.FlowLabel = w & FlowLabelMask
	h.TTL = ip[7]
	h.ID, h.DontFragment = 0, false
	copy(h.Src6[:], ip[8:24])
	copy(h.Dst6[:], ip[24:40])
	if h.NoChecksum {
		return nil, ErrChecksum // RFC 8200: a zero UDP checksum over IPv6 is invalid
	}
	if v != VerifyNone && !checksumOK(pseudoSum6(&h.Src6, &h.Dst6, udpLen), udp, v) {
		return nil, ErrChecksum
	}
	return udp[UDPHeaderLen:udpLen:udpLen], nil
}

// checksumOK checks the UDP checksum of udp (header and payload) whose pseudo-header sums to
// pseudo: right, or with VerifyLocal the pseudo-header sum left for offload.
func checksumOK(pseudo uint64, udp []byte, v Verify) bool {
	if csumFold(csum(pseudo, udp)) == 0xffff {
		return true
	}
	return v == VerifyLocal && binary.BigEndian.Uint16(udp[6:8]) == csumFold(pseudo)
}
