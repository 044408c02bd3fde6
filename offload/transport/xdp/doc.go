// Package xdp is the AF_XDP transport for UDP: datagrams of offloaded sockets whose traffic
// enters and leaves the host through a network interface travel between the program and the NIC
// through AF_XDP rings (package offload/xdp) instead of the kernel's socket layer; everything
// else keeps using the kernel socket, which every offloaded socket still is.
//
// # Process-wide state (env.go, iface.go)
//
// An Env holds, per interface it offloads, the steering program (attached on first use) and one
// AF_XDP socket per receive queue, or the reason the interface stays with the kernel (another
// program already attached: *xdp.BusyError; missing capabilities; no XDP support), logged once.
// It also holds one netlink connection and a neighbour cache, serialised by one mutex.
//
// # Receive (flows.go, demux.go, recv.go)
//
// Bound registers the socket's flows in the steering program: its local address and port, or,
// for a wildcard bind, every address of the offloaded interfaces of the families the socket
// receives (an AF_INET6 socket bound to :: gets the IPv6 ones and, without IPV6_V6ONLY, the IPv4
// ones; flows.go) with that port. Join adds
// a (group, port) entry. The thread that receives (any thread inside a receive call, or
// RingReady) takes frames from the RX rings of every queue under that queue's mutex, parses them
// and hands each to the socket the kernel would deliver it to (exact local address before
// wildcard, an AF_INET socket before an AF_INET6 one for IPv4, a connected socket only from its
// peer, a multicast datagram to every member) by
// putting the frame, still in UMEM, in the socket's bounded queue; the frame goes back to the
// fill ring once the program copied it out (or at once when the queue is full: a drop, counted).
// The kernel socket is read too, for the traffic the program does not steer.
//
// A receive spins up to RxPoll polls, then sleeps in ppoll on the kernel socket, the AF_XDP
// sockets (frames on an RX ring) and the socket's own wake pipe: a thread that puts a frame in
// the queue of a socket somebody sleeps on writes one byte to it.
//
// # Select, poll, epoll, fork, statistics (ready.go, handover.go, ringstats.go)
//
// The socket offers the engine the same readiness methods as the shared-memory transport's:
// RingReady, Arrivals, Spin, and Bell (an epoll fd of the library's own holding the wake pipe
// and every AF_XDP socket) with Rang and Quiet to empty it. Before a fork HandOver takes the
// queued datagrams for the engine's spill region and GiveUp sends the socket back to the kernel.
// Each AF_XDP socket has a ring in the statistics segment (Params.Stats) with its frames, bytes
// and the kernel's XDP_STATISTICS.
//
// # Transmit (send.go, route.go, kick.go)
//
// A send looks its destination up (RouteGet, then the neighbour cache; the answer is cached per
// socket while the Env's generation holds and for at most routeTTL), builds the Ethernet, IPv4 or
// IPv6 and UDP headers in a TX frame and posts it on the TX ring of the interface. In copy mode the
// kernel sends only inside a system call on the AF_XDP socket (a kick): a lone send kicks at
// once, the sends of a stream (back to back, nothing else in between) share one kick per 32
// frames, and whatever the program does next, its next call, exit, fork or the Kicker thread
// (after Params.Kicker's delay) kicks what waits (kick.go). sendmmsg kicks once per call. Destinations the
// rings cannot serve go through the kernel: a neighbour not yet resolved (the kernel resolves it
// and the cache is asked again at the next send), local and broadcast destinations, routes out
// of an interface this process does not own, datagrams larger than the path MTU, control
// messages and unusual flags, and multicast with IP_MULTICAST_LOOP on (the default): the kernel
// both sends such a datagram out and loops a copy back to every member on this host, in any
// process, which frames sent from an AF_XDP ring would never reach. With IP_MULTICAST_LOOP off
// multicast goes through the ring. IPv6 datagrams (an AF_INET6 socket's; its v4-mapped
// destinations are IPv4) take the ring too, with the kernel's hop limit, traffic class and flow
// label (ipv6opts.go); IPv6 multicast, a link-local destination without a scope id and flow
// labels the program gives (IPV6_FLOWINFO_SEND) go through the kernel.
//
// The package runs inside the program the library is preloaded into: raw system calls only, no
// goroutine, timer, os.File or net package, so the Go netpoller never starts.
package xdp
