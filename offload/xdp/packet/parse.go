package packet

import "encoding/binary"

// Parse reads the Ethernet + IPv4 + UDP frame in frame into h and returns the UDP payload, a slice
// of frame (capacity limited to its length). The frame may carry one 802.1Q tag, IPv4 options
// (skipped) and trailing bytes after the IPv4 packet (Ethernet padding, ignored); a UDP length
// shorter than the IPv4 payload trims the datagram, as the kernel does. With verify, the IPv4
// header checksum and (unless it is 0) the UDP checksum are checked.
//
// Verification rejects frames whose sender left the UDP checksum to offload and whose device never
// filled it in: a kernel socket sending over veth (or any device with transmit checksum offload
// seen before the NIC) leaves only the pseudo-header sum (CHECKSUM_PARTIAL). Verify only frames
// that come from a real wire.
//
// Errors (unwrapped; h is then partly written and meaningless): ErrNotUDP, ErrFragment (hand the
// frame to the kernel); ErrTruncated, ErrMalformed, ErrChecksum (drop it). Parse allocates nothing.
func Parse(frame []byte, h *Header, verify bool) ([]byte, error) {
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
	udp := ip[ihl:total]
	if len(udp) < UDPHeaderLen {
		return nil, ErrTruncated
	}
	udpLen := int(binary.BigEndian.Uint16(udp[4:6]))
	if udpLen < UDPHeaderLen || udpLen > len(udp) {
		return nil, ErrMalformed
	}
	udp = udp[:udpLen]

	h.TOS = ip[1]
	h.ID = binary.BigEndian.Uint16(ip[4:6])
	h.DontFragment = frag&ipFlagDF != 0
	h.TTL = ip[8]
	copy(h.Src[:], ip[12:16])
	copy(h.Dst[:], ip[16:20])
	h.SrcPort = binary.BigEndian.Uint16(udp[0:2])
	h.DstPort = binary.BigEndian.Uint16(udp[2:4])
	h.NoChecksum = udp[6] == 0 && udp[7] == 0
	if verify && !h.NoChecksum && csumFold(csum(pseudoSum(h.Src, h.Dst, udpLen), udp)) != 0xffff {
		return nil, ErrChecksum
	}
	return udp[UDPHeaderLen:udpLen:udpLen], nil
}
