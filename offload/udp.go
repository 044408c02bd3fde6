package offload

import (
	"net/netip"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
)

// udpBound tells the socket's transport that the kernel socket has an address now.
func (e *Engine) udpBound(s *Socket, fd int) {
	if u := s.rings(); u != nil {
		u.Bound(fd)
	}
}

// udpConnected tells the socket's transport that the kernel socket is connected to remote (or
// disconnected: the zero value).
func (e *Engine) udpConnected(s *Socket, fd int, remote netip.AddrPort) {
	// Its shortcut to the kernel (and the peer it knew) goes; the next send through the
	// engine allows it again for the new destination.
	e.dropKernelSends(fd, s)
	if u := s.rings(); u != nil {
		u.Connected(fd, remote)
	}
}

// udpWaitInbox makes a blocking receive on a UDP socket that may still get rings wait for them:
// a receive that blocked in the kernel before the socket had its inbox would never see a ring
// datagram. It returns once the socket has its inbox (or never will) or the kernel socket is
// readable, or the error that ends the receive (SO_RCVTIMEO, a signal).
func (e *Engine) udpWaitInbox(s *Socket, c *transport.Call) syscall.Errno {
	if u := s.rings(); u != nil && !u.Starting() {
		return 0 // the common case, decided without a lock (the AF_XDP transport reads both paths)
	}
	waiting := func() bool {
		if !s.isDecided() {
			return true // the rule (and the transport) come with bind, connect or a first send
		}
		u := s.rings()
		return u != nil && u.Starting()
	}
	if s.nonblock.Load() || c.RecvFlags()&unix.MSG_DONTWAIT != 0 || !waiting() {
		return 0
	}
	_, errno := wait.Until(c.FD, e.cfg.IOMux.Signals, func() bool { return !waiting() })
	return errno
}

// giveUp sends an offloaded UDP socket back to the kernel for good, with the reason.
func (e *Engine) giveUp(s *Socket, fd int, r transport.Reason, why string) {
	u := s.rings()
	if u == nil || u.GaveUp() != transport.ReasonNone {
		return
	}
	u.GiveUp(r)
	u.RestoreOptions(fd)
	s.mu.Lock()
	s.kind, s.reason = transport.KindOS, r
	dgram := s.typ == sockDgram
	s.publishLocked()
	s.mu.Unlock()
	if dgram {
		// Its epoll memberships move from the engine's inner sets into the program's sets, as a
		// kernel socket's are: the kernel then reports it in every process that shares the set
		// (a forked child never enters the engine to translate the inner set's tag). What its
		// rings held is in a spill region, which epoll waits look at in C (spill_epoll.c). A
		// connection keeps its inner-set membership: its ring may still hold bytes for us.
		e.mux.HandOver(&s.mux)
	}
	e.log.Info("socket back to the kernel", zap.Int("fd", fd), zap.String("why", why))
}

// kernelOnlyOptions are the socket options whose effect the rings cannot give (ancillary data,
// device binding, filters, segmentation, multicast source filters): setting one
// sends the socket back to the kernel.
var kernelOnlyOptions = map[[2]int]string{
	{unix.IPPROTO_IP, unix.IP_PKTINFO}:               "IP_PKTINFO",
	{unix.IPPROTO_IP, unix.IP_RECVTOS}:               "IP_RECVTOS",
	{unix.IPPROTO_IP, unix.IP_RECVTTL}:               "IP_RECVTTL",
	{unix.IPPROTO_IP, unix.IP_RECVOPTS}:              "IP_RECVOPTS",
	{unix.IPPROTO_IP, unix.IP_RETOPTS}:               "IP_RETOPTS",
	{unix.IPPROTO_IP, unix.IP_RECVERR}:               "IP_RECVERR",
	{unix.IPPROTO_IP, unix.IP_RECVORIGDSTADDR}:       "IP_RECVORIGDSTADDR",
	{unix.IPPROTO_IP, unix.IP_TRANSPARENT}:           "IP_TRANSPARENT",
	{unix.SOL_SOCKET, unix.SO_TIMESTAMP}:             "SO_TIMESTAMP",
	{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS}:           "SO_TIMESTAMPNS",
	{unix.SOL_SOCKET, unix.SO_TIMESTAMPING}:          "SO_TIMESTAMPING",
	{unix.SOL_SOCKET, unix.SO_RXQ_OVFL}:              "SO_RXQ_OVFL",
	{unix.SOL_SOCKET, unix.SO_BINDTODEVICE}:          "SO_BINDTODEVICE",
	{unix.SOL_SOCKET, unix.SO_ATTACH_FILTER}:         "SO_ATTACH_FILTER",
	{unix.SOL_SOCKET, unix.SO_ATTACH_BPF}:            "SO_ATTACH_BPF",
	{unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF}: "SO_ATTACH_REUSEPORT_CBPF",
	{unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_EBPF}: "SO_ATTACH_REUSEPORT_EBPF",
	{unix.SOL_SOCKET, unix.SO_MARK}:                  "SO_MARK",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO}:       "IPV6_RECVPKTINFO",
	{unix.IPPROTO_IPV6, unix.IPV6_2292PKTINFO}:       "IPV6_2292PKTINFO",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT}:      "IPV6_RECVHOPLIMIT",
	{unix.IPPROTO_IPV6, unix.IPV6_2292HOPLIMIT}:      "IPV6_2292HOPLIMIT",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS}:        "IPV6_RECVTCLASS",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVERR}:           "IPV6_RECVERR",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVORIGDSTADDR}:   "IPV6_RECVORIGDSTADDR",
	{unix.IPPROTO_IPV6, unix.IPV6_TRANSPARENT}:       "IPV6_TRANSPARENT",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVRTHDR}:         "IPV6_RECVRTHDR",
	{unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR}:         "IPV6_2292RTHDR",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVHOPOPTS}:       "IPV6_RECVHOPOPTS",
	{unix.IPPROTO_IPV6, unix.IPV6_2292HOPOPTS}:       "IPV6_2292HOPOPTS",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVDSTOPTS}:       "IPV6_RECVDSTOPTS",
	{unix.IPPROTO_IPV6, unix.IPV6_2292DSTOPTS}:       "IPV6_2292DSTOPTS",
	{unix.IPPROTO_IPV6, ipv6FlowInfo}:                "IPV6_FLOWINFO",
	{unix.IPPROTO_IPV6, unix.IPV6_RECVPATHMTU}:       "IPV6_RECVPATHMTU",
	{unix.IPPROTO_UDP, unix.UDP_SEGMENT}:             "UDP_SEGMENT",
	{unix.IPPROTO_UDP, unix.UDP_GRO}:                 "UDP_GRO",
	{unix.IPPROTO_UDP, unix.UDP_CORK}:                "UDP_CORK",
	{unix.IPPROTO_UDP, unix.UDP_ENCAP}:               "UDP_ENCAP",
}

// ipv6FlowInfo is IPV6_FLOWINFO (linux/in6.h), which golang.org/x/sys/unix does not define: the
// flow label of received datagrams as ancillary data.
const ipv6FlowInfo = 11

// udpOption notes a socket option the program set successfully on an offloaded UDP socket.
func (e *Engine) udpOption(s *Socket, fd int, level, name int, val uintptr, vlen uint32) {
	if u := s.rings(); u != nil && (level == unix.IPPROTO_IP || level == unix.IPPROTO_IPV6) && val != 0 {
		switch act, group, source := parseMcOption(level, name, optionBytes(val, vlen)); act {
		case mcJoin:
			u.Join(fd, group, source)
			s.st.JoinGroup(group)
			return
		case mcLeave:
			u.Leave(group, source)
			if !source.IsValid() {
				s.st.LeaveGroup(group)
			}
			return
		case mcOther:
			e.giveUp(s, fd, transport.ReasonUnsupported, "multicast source filter")
			return
		}
	}
	what, ok := kernelOnlyOptions[[2]int{level, name}]
	if !ok {
		return
	}
	if vlen >= 4 && val != 0 && sysc.IntAt(val) == 0 &&
		name != unix.SO_BINDTODEVICE && name != unix.SO_ATTACH_FILTER && name != unix.SO_ATTACH_BPF {
		return // switched off: nothing the rings miss
	}
	e.giveUp(s, fd, transport.ReasonUnsupported, what)
}

// optionBytes is an option value the kernel has just accepted (so it is readable), at most
// struct group_source_req long; nil when it is not readable after all.
func optionBytes(val uintptr, vlen uint32) (b []byte) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			b = nil
		}
	}()
	n := min(int(vlen), gsrSize)
	b = make([]byte, n)
	copy(b, umem.Bytes(val, n))
	return b
}
