// Package xdp is the kernel side of goxio's AF_XDP transport: an XDP program that
// steers offloaded UDP flows to AF_XDP sockets, its loader, and the AF_XDP sockets
// themselves (UMEM and the fill, completion, RX and TX rings).
//
// The path of a received datagram, stage by stage:
//
//  1. The NIC (or veth) hands the frame to the steering program (program.go), attached
//     to the interface through a bpf_link by Attach (loader.go). The program parses
//     Ethernet (one 802.1Q/802.1ad tag), IPv4 (any IHL, no fragments) or IPv6 (no
//     extension header) and UDP, and looks the destination up in the flow maps (unicast,
//     AddFlow: one for IPv4, one for IPv6) and the group map (IPv4 multicast, AddGroup).
//     Anything else, ARP, ICMP, ICMPv6 and neighbour discovery, TCP, IPv6 extension
//     headers and fragments included, is passed to the kernel untouched.
//  2. A hit is redirected to the AF_XDP socket registered for the receiving queue
//     (Program.Register); with no socket on that queue the frame goes to the kernel.
//  3. The kernel copies (or, in zero-copy mode, DMAs) the frame into a UMEM frame taken
//     from the fill ring and posts it on the RX ring; Socket.Receive (rx.go) hands it to
//     the caller as a Frame aliasing UMEM, and Socket.Release gives it back to the fill
//     ring.
//
// Transmission (tx.go): Socket.Alloc hands out free TX frames, the caller writes a
// whole Ethernet frame into them, Socket.Transmit posts them on the TX ring and kicks
// the kernel when it asks for it (need_wakeup); completed frames come back through the
// completion ring and are reaped by Alloc and Transmit.
//
// Frame accounting (umem.go): UMEM is split into an RX pool and a TX pool. Every RX
// frame is either owned by the kernel (fill ring, in flight, RX ring) or held by the
// caller; every TX frame is free, held by the caller, or owned by the kernel (TX ring,
// in flight, completion ring). Socket.Accounting reports the counts, which always add
// up to the pool sizes.
//
// The package runs inside the program the library is preloaded into. Maps, program load,
// bpf_link and program info go through cilium/ebpf v0.21 (pinned: v0.22 looks for a BPF token
// through /proc/self/mountinfo and keeps a token's descriptor open for the process's life, at a
// number no caller can learn); interfaces are read through the caller's netlink connection
// (packet.Conn). The AF_XDP socket, its UMEM and rings are raw system calls
// (golang.org/x/sys/unix). Attach opens descriptors (maps, program, link, and short-lived ones:
// cilium's feature probes, the program's fdinfo): its caller runs it where they land out of the
// program's numbers and marks Program.FDs internal (fds.go). A test runs every entry point in a
// fresh process and checks that nothing but the reported descriptors is kept.
package xdp
