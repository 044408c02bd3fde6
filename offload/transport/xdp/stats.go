package xdp

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/xdp"
)

// counters are a socket's statistics, each an atomic counter.
type counters struct {
	xdpRx, xdpRxBytes atomic.Uint64 // datagrams (payload bytes) the program read from the queue
	osRx              atomic.Uint64 // datagrams the program read from the kernel socket
	rxDrops           atomic.Uint64 // steered datagrams dropped because the socket's queue was full
	xdpTx, xdpTxBytes atomic.Uint64 // datagrams (payload bytes) posted on a TX ring
	osTx              atomic.Uint64 // datagrams sent through the kernel
	txDrops           atomic.Uint64 // datagrams dropped because the TX ring stayed full
	txEagain          atomic.Uint64 // sends failed with EAGAIN because the TX ring was full
	// osTxWhy counts the kernel sends by reason (KernelWhy).
	osTxWhy [numWhy]atomic.Uint64
}

// KernelWhy says why one datagram went through the kernel instead of a TX ring.
type KernelWhy uint8

// The reasons.
const (
	WhyUnsupported   KernelWhy = iota // flags, control messages, no destination, shutdown, given up
	WhyUnresolved                     // the next hop's MAC is not known yet (the kernel resolves it)
	WhyLocal                          // the destination is this host (local or loopback route)
	WhyBroadcast                      // a broadcast destination
	WhyNotOffloaded                   // the route leaves through an interface this process does not own
	WhyTooBig                         // larger than the path MTU (the kernel fragments it)
	WhyMulticastLoop                  // multicast with IP_MULTICAST_LOOP on (the kernel loops a copy back)
	WhyRouteError                     // the route lookup failed (the kernel reports the error)
	WhyIPv6Multicast                  // an IPv6 multicast destination (IPv6 groups are the kernel's)
	WhyHopLimit                       // IPV6_UNICAST_HOPS reads a default the route's differs from (hopLimitOf)
	WhyFlowLabel                      // IPV6_FLOWINFO_SEND: the program gives flow labels, leased from the kernel
	WhyLinkLocal                      // a link-local IPv6 destination without a scope id (the kernel applies the bound device)
	numWhy
)

// Counts are one socket's counters.
type Counts struct {
	XDPRx, XDPRxBytes uint64 // datagrams and payload bytes received through an RX ring
	OSRx              uint64 // datagrams received from the kernel socket
	RxDrops           uint64 // steered datagrams dropped: the socket's queue was full
	XDPTx, XDPTxBytes uint64 // datagrams and payload bytes sent through a TX ring
	OSTx              uint64 // datagrams sent through the kernel
	TxDrops           uint64 // datagrams dropped: the TX ring stayed full (as by a full NIC queue)
	TxEagain          uint64 // sends failed with EAGAIN: the TX ring was full
	OSTxWhy           [numWhy]uint64
	QueueDepth        int    // datagrams waiting in the socket's queue now
	Wakes             uint64 // wake-ups of sleeping receivers through the wake pipe
}

// Counts returns the socket's counters.
func (u *UDP) Counts() Counts {
	c := Counts{XDPRx: u.xdpRx.Load(), XDPRxBytes: u.xdpRxBytes.Load(), OSRx: u.osRx.Load(),
		RxDrops: u.rxDrops.Load(), XDPTx: u.xdpTx.Load(), XDPTxBytes: u.xdpTxBytes.Load(),
		OSTx: u.osTx.Load(), TxDrops: u.txDrops.Load(), TxEagain: u.txEagain.Load(),
		QueueDepth: int(u.q.depth.Load()), Wakes: u.q.wakes.Load()}
	for i := range c.OSTxWhy {
		c.OSTxWhy[i] = u.osTxWhy[i].Load()
	}
	return c
}

// RingStats describe one AF_XDP socket (one queue of one interface).
type RingStats struct {
	Ifname     string
	Ifindex    int
	Queue      int
	Mode       xdp.Mode // how the steering program is attached
	ZeroCopy   bool
	Stats      xdp.Stats
	Accounting xdp.Accounting
}

// EnvCounts are the Env's own counters.
type EnvCounts struct {
	RxUnmatched uint64 // steered frames no socket of this process took (closed meanwhile, buffers short)
	RxBad       uint64 // steered frames that did not parse as IPv4 UDP
}

// RingStats returns the statistics of every AF_XDP socket of the Env.
func (e *Env) RingStats() []RingStats {
	var out []RingStats
	for _, x := range *e.xsks.Load() {
		st, _ := x.s.Stats()
		out = append(out, RingStats{Ifname: x.ifc.name, Ifindex: x.ifc.index, Queue: x.queue,
			Mode: x.ifc.prog.Mode(), ZeroCopy: x.s.ZeroCopy(), Stats: st, Accounting: x.s.Accounting()})
	}
	return out
}

// Counts returns the Env's own counters.
func (e *Env) Counts() EnvCounts {
	return EnvCounts{RxUnmatched: e.rxUnmatched.Load(), RxBad: e.rxBad.Load()}
}
