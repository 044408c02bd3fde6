package capture

import (
	"encoding/binary"
	"net/netip"
)

// The headers a packet would have had through the kernel on the loopback interface: Ethernet
// with zero addresses (what Linux puts on lo), IPv4 without options (DF set, TTL 64, or 1 to a
// multicast group, as a socket's defaults) or IPv6 without extension headers (hop limit 64, or 1
// to a multicast group), UDP, or TCP without options. A v4-mapped IPv6 address (a dual-stack
// socket talking IPv4) is IPv4 on the wire.
const (
	EthLen     = 14
	IPLen      = 20
	IP6Len     = 40
	UDPLen     = 8
	TCPLen     = 20
	UDPHdrLen  = EthLen + IPLen + UDPLen
	TCPHdrLen  = EthLen + IPLen + TCPLen
	UDP6HdrLen = EthLen + IP6Len + UDPLen
	TCP6HdrLen = EthLen + IP6Len + TCPLen
	// MaxTCPPayload is the most payload one synthesized TCP segment carries (IPv4's 16-bit total
	// length); larger writes become several segments.
	MaxTCPPayload = 65535 - IPLen - TCPLen
)

// TCP flags of synthesized segments.
const (
	tcpPSH = 0x08
	tcpACK = 0x10
)

// putIP writes the Ethernet and IPv4 headers of a packet of payload bytes after the IP header.
func putIP(b []byte, proto uint8, src, dst netip.Addr, payload int, id uint16) {
	clear(b[:EthLen])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[EthLen : EthLen+IPLen]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(IPLen+payload))
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8] = 64
	if dst.IsMulticast() {
		ip[8] = 1
	}
	ip[9] = proto
	ip[10], ip[11] = 0, 0
	s, d := src.As4(), dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum(0, ip)))
}

// putIP6 writes the Ethernet and IPv6 headers of a packet of payload bytes after the IPv6 header.
func putIP6(b []byte, proto uint8, src, dst netip.Addr, payload int) {
	clear(b[:EthLen])
	binary.BigEndian.PutUint16(b[12:], 0x86dd)
	ip := b[EthLen : EthLen+IP6Len]
	binary.BigEndian.PutUint32(ip, 6<<28)
	binary.BigEndian.PutUint16(ip[4:], uint16(payload))
	ip[6], ip[7] = proto, 64
	if dst.IsMulticast() {
		ip[7] = 1
	}
	s, d := src.As16(), dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
}

// family says how a packet between src and dst is framed: its header length (UDPHdrLen or
// TCPHdrLen, or their IPv6 forms), and the two addresses as the wire carries them (v4-mapped ones
// unmapped); ok is false for a pair no wire carries (an IPv4 and an IPv6 address).
func family(src, dst netip.Addr, udp bool) (hdr int, s, d netip.Addr, ok bool) {
	s, d = src.Unmap(), dst.Unmap()
	switch {
	case s.Is4() && d.Is4():
		hdr = TCPHdrLen
		if udp {
			hdr = UDPHdrLen
		}
	case s.Is6() && d.Is6():
		hdr = TCP6HdrLen
		if udp {
			hdr = UDP6HdrLen
		}
	default:
		return 0, s, d, false
	}
	return hdr, s, d, true
}

// ipLen is the IP header length of a synthesized frame with hdr bytes of headers.
func ipLen(hdr int) int {
	if hdr == UDP6HdrLen || hdr == TCP6HdrLen {
		return IP6Len
	}
	return IPLen
}

// putUDP writes the headers of a UDP datagram from src to dst with total bytes of payload into
// b (hdr bytes, from family), its checksum left for l4Checksum.
func putUDP(b []byte, hdr int, src, dst netip.AddrPort, total int, id uint16) {
	if ipLen(hdr) == IP6Len {
		putIP6(b, 17, src.Addr(), dst.Addr(), UDPLen+total)
	} else {
		putIP(b, 17, src.Addr(), dst.Addr(), UDPLen+total, id)
	}
	u := b[EthLen+ipLen(hdr) : hdr]
	binary.BigEndian.PutUint16(u, src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(UDPLen+total))
	u[6], u[7] = 0, 0
}

// putTCP writes the headers of a TCP segment (PSH|ACK) of n bytes into b (hdr bytes, from
// family), its checksum left for l4Checksum.
func putTCP(b []byte, hdr int, src, dst netip.AddrPort, seq, ack uint32, n int, id uint16) {
	if ipLen(hdr) == IP6Len {
		putIP6(b, 6, src.Addr(), dst.Addr(), TCPLen+n)
	} else {
		putIP(b, 6, src.Addr(), dst.Addr(), TCPLen+n, id)
	}
	t := b[EthLen+ipLen(hdr) : hdr]
	binary.BigEndian.PutUint16(t, src.Port())
	binary.BigEndian.PutUint16(t[2:], dst.Port())
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12], t[13] = 5<<4, tcpPSH|tcpACK
	binary.BigEndian.PutUint16(t[14:], 65535)
	t[16], t[17], t[18], t[19] = 0, 0, 0, 0
}

// Where the UDP and TCP checksums lie in a synthesized IPv4 frame (their last byte, plus one).
const (
	udpSumEnd = EthLen + IPLen + 8
	tcpSumEnd = EthLen + IPLen + 18
)

// sumStart is where the checksum of a frame with hdr bytes of synthesized headers starts.
func sumStart(hdr int) int {
	if hdr == UDPHdrLen || hdr == UDP6HdrLen {
		return EthLen + ipLen(hdr) + 6
	}
	return EthLen + ipLen(hdr) + 16
}

// l4Checksum fills in the UDP or TCP checksum of a frame whose hdr bytes of headers (from
// family) are in b and whose payload is bufs' bytes [from, from+n): the one step that reads the
// whole payload, done only for a packet recorded or a program that reads the checksum.
func l4Checksum(b []byte, hdr int, bufs [][]byte, from, n int) {
	l4 := b[EthLen+ipLen(hdr) : hdr]
	switch hdr {
	case UDPHdrLen, UDP6HdrLen:
		c := ^fold(payloadSum(pseudo(b, hdr, 17, UDPLen+n)+sum(0, l4), bufs, from, n))
		if c == 0 {
			c = 0xffff // a computed zero is sent as all ones (RFC 768; mandatory over IPv6)
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	case TCPHdrLen, TCP6HdrLen:
		binary.BigEndian.PutUint16(l4[16:], ^fold(payloadSum(pseudo(b, hdr, 6, TCPLen+n)+sum(0, l4), bufs, from, n)))
	}
}

// pseudo is the checksum of the IPv4 or IPv6 pseudo-header of a frame whose IP header is in b.
func pseudo(b []byte, hdr int, proto uint8, l4len int) uint64 {
	ip := b[EthLen:]
	if ipLen(hdr) == IP6Len {
		return sum(0, ip[8:40]) + uint64(proto) + uint64(l4len)
	}
	return sum(0, ip[12:20]) + uint64(proto) + uint64(l4len)
}

// sum adds b to an Internet checksum accumulator as 16-bit big-endian words (b of even length
// unless it is the last piece).
func sum(acc uint64, b []byte) uint64 {
	for len(b) >= 2 {
		acc += uint64(b[0])<<8 | uint64(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// payloadSum adds bytes [from, from+n) of the scattered bufs to acc, keeping the 16-bit word
// alignment across buffer boundaries.
func payloadSum(acc uint64, bufs [][]byte, from, n int) uint64 {
	odd := false
	for _, p := range bufs {
		if n == 0 {
			break
		}
		if from >= len(p) {
			from -= len(p)
			continue
		}
		p = p[from:]
		from = 0
		p = p[:min(len(p), n)]
		n -= len(p)
		if odd && len(p) > 0 {
			acc += uint64(p[0])
			p = p[1:]
			odd = false
		}
		acc = sum(acc, p[:len(p)&^1])
		if len(p)&1 == 1 {
			acc += uint64(p[len(p)-1]) << 8
			odd = true
		}
	}
	return acc
}

// fold folds a checksum accumulator into 16 bits.
func fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// gather copies bytes [from, from+len(dst)) of the scattered bufs into dst; it returns how many
// it copied.
func gather(dst []byte, bufs [][]byte, from int) int {
	n := 0
	for _, p := range bufs {
		if n == len(dst) {
			break
		}
		if from >= len(p) {
			from -= len(p)
			continue
		}
		n += copy(dst[n:], p[from:])
		from = 0
	}
	return n
}

// wireSums returns a received Ethernet frame as a wire carries it: an IPv4 or IPv6 (no extension
// header) UDP datagram whose checksum does not verify is copied into fixed with the checksum
// finished. A veth or loopback peer hands frames over with the checksum only begun (the kernel's
// CHECKSUM_PARTIAL: the pseudo-header's sum, which tcpdump on such an interface shows as
// "incorrect" too); the wire of a NIC carries the finished one, and so does the capture. Anything
// else, and a frame that cannot be parsed, is returned as it is; the frame itself (a ring's) is
// never written.
func wireSums(frame, fixed []byte) []byte {
	if len(frame) < UDPHdrLen || len(frame) > len(fixed) {
		return frame
	}
	var hdr int // the family's UDP header length (pseudo)
	var l4 []byte
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		ip := frame[EthLen:]
		ihl := int(ip[0]&0x0f) * 4
		if ip[0]>>4 != 4 || ihl < IPLen || ip[9] != 17 || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return frame // not IPv4 UDP, or a fragment (its checksum covers the whole datagram)
		}
		l4, hdr = ip[ihl:], UDPHdrLen
	case 0x86dd:
		ip := frame[EthLen:]
		if len(ip) < IP6Len || ip[0]>>4 != 6 || ip[6] != 17 {
			return frame // not IPv6 UDP without extension headers
		}
		l4, hdr = ip[IP6Len:], UDP6HdrLen
	default:
		return frame
	}
	if len(l4) < UDPLen {
		return frame
	}
	ulen := int(binary.BigEndian.Uint16(l4[4:]))
	if ulen < UDPLen || ulen > len(l4) || binary.BigEndian.Uint16(l4[6:]) == 0 {
		return frame // no checksum (allowed over IPv4, invalid over IPv6) or a length the frame does not hold
	}
	ps := pseudo(frame, hdr, 17, ulen)
	if fold(sum(ps, l4[:ulen])) == 0xffff {
		return frame
	}
	out := fixed[:len(frame)]
	copy(out, frame)
	u := out[len(frame)-len(l4):]
	u[6], u[7] = 0, 0
	c := ^fold(sum(ps, u[:ulen]))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return out
}
