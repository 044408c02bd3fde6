// Package packet turns UDP datagrams into Ethernet frames for an AF_XDP TX ring, parses the frames
// an AF_XDP RX ring delivers, and asks the kernel (rtnetlink) for the routes, links and neighbours
// needed to address them.
//
// # Frames
//
// Build writes an untagged Ethernet II + IPv4 (IHL 5, no options) or IPv6 (no extension header) +
// UDP frame into a caller buffer and computes the checksums (an IPv4 UDP checksum may be left 0;
// an IPv6 one never is). It refuses, with ErrTooBig, a datagram whose IP packet would exceed the
// path MTU or whose frame does not fit the buffer: the caller sends that datagram through the
// kernel, which fragments it. Frames are not padded to the 60-byte Ethernet minimum (NICs and veth
// pad on transmit).
//
// Parse reads one frame (Ethernet, at most one 802.1Q tag, IPv4 with any IHL or IPv6 without
// extension headers, UDP), checks every length field against the frame, verifies the checksums as
// asked (Verify; an IPv6 UDP checksum of 0 is always rejected), and returns the payload as a slice
// aliasing the frame. A frame that is well formed but not an unfragmented UDP datagram gives
// ErrNotUDP or ErrFragment (hand it to the kernel); a broken one gives ErrTruncated, ErrMalformed
// or ErrChecksum (drop it). Build and Parse allocate nothing and are safe for concurrent use on
// distinct buffers.
//
// # Routes, links, neighbours
//
// A Conn is the engine's one netlink connection type: a github.com/vishvananda/netlink Handle with
// one NETLINK_ROUTE socket kept open (FDs reports it, so a caller can keep it out of the program's
// reach), answers bounded by a deadline on the Go runtime's netpoller. Addresses are netip.Addr of
// either family (an IPv4-mapped one is asked as IPv4). RouteGet asks the kernel
// the question `ip route get` asks; LinkByIndex and LinkByName read an interface (with its queue
// counts and XDP state); Addrs lists the IPv4 and IPv6 addresses; NeighGet reads one neighbour entry and NeighNudge
// asks the kernel to (re)validate one, which is how a missing or stale next hop gets resolved
// without sending traffic through the kernel. NeighCache keeps neighbour answers keyed by
// (ifindex, next hop) with an age limit supplied by the caller's clock and a generation counter
// the caller bumps to drop everything. A Conn and a NeighCache are not safe for concurrent use:
// the caller serialises them (one mutex around both is enough).
//
// A Conn talks to the network namespace its socket was created in, whatever thread uses it later.
package packet
