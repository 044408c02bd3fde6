package packet

import "errors"

// Sentinel errors. Build and Parse return them unwrapped (their hot paths allocate nothing); the
// netlink functions wrap them, or the kernel's errno, with an operation prefix, so test with
// errors.Is.
var (
	// ErrTooBig: Build's IPv4 packet exceeds the MTU, or its frame exceeds the buffer, or the payload
	// exceeds MaxPayload. Send the datagram through the kernel.
	ErrTooBig = errors.New("packet: build: datagram too big")
	// ErrBadLength: Build's total does not match the sum of the payload slices, or is negative.
	ErrBadLength = errors.New("packet: build: payload length mismatch")
	// ErrNotUDP: Parse met a well-formed frame that is not IPv4 or IPv6 UDP (ARP, TCP, ICMP,
	// ICMPv6, an IPv6 extension header, a second VLAN tag, ...). Hand it to the kernel.
	ErrNotUDP = errors.New("packet: parse: not an IP UDP frame")
	// ErrFragment: Parse met an IPv4 fragment (MF set or a non-zero offset) or an IPv6 fragment
	// header. Hand it to the kernel, which reassembles.
	ErrFragment = errors.New("packet: parse: IP fragment")
	// ErrTruncated: the frame ends before a header, or before the length an IPv4 or UDP length
	// field announces.
	ErrTruncated = errors.New("packet: parse: truncated frame")
	// ErrMalformed: a header field is impossible (IP version not the EtherType's, IHL below 5,
	// total length below the header length, IPv6 payload length 0, UDP length below 8 or above
	// the IP payload).
	ErrMalformed = errors.New("packet: parse: malformed header")
	// ErrChecksum: checksum verification was asked for and the IPv4 header or UDP checksum is
	// wrong, or an IPv6 UDP checksum is 0 (always invalid).
	ErrChecksum = errors.New("packet: parse: bad checksum")
	// ErrNoNeighbour: the kernel has no neighbour entry for that (interface, address).
	ErrNoNeighbour = errors.New("packet: no neighbour entry")
	// ErrNetlink: the kernel's answer does not have the expected shape (short message, wrong
	// type, truncated attribute, answer too large for the receive buffer).
	ErrNetlink = errors.New("packet: unexpected netlink answer")
)
