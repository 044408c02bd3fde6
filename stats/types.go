package stats

import "strconv"

// Transport is what carries a socket's traffic.
type Transport uint8

// Transports. The zero value is the kernel: a socket starts there and moves
// to a faster path when one is possible.
const (
	TransportOS  Transport = iota // the kernel socket
	TransportSHM                  // shared-memory rings to a goxio peer on the same host
	TransportXDP                  // AF_XDP rings to a NIC
)

var transportNames = [...]string{"os", "shm", "xdp"}

// String returns the transport's short name ("os", "shm", "xdp"), or
// "transport(N)" for a value this version does not know.
func (t Transport) String() string {
	if int(t) < len(transportNames) {
		return transportNames[t]
	}
	return "transport(" + strconv.Itoa(int(t)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (t Transport) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Offloaded reports whether the transport is not the kernel.
func (t Transport) Offloaded() bool { return t != TransportOS }

// Reason says why a socket is on the kernel.
type Reason uint8

// Reasons. Append new values at the end: the number is stored in segments.
const (
	ReasonNone                Reason = iota // offloaded, or not decided yet
	ReasonRule                              // a libvma.conf rule said "use os" (see the rule text and line)
	ReasonNoFasterPath                      // no goxio peer or offloadable interface for this flow
	ReasonUnsupportedOption                 // the program set a socket option the fast path cannot honour
	ReasonResources                         // out of rings, buffers or slots
	ReasonForkedChild                       // the socket lives in a forked child (pure passthrough)
	ReasonDisabled                          // VMA_OFFLOADED_SOCKETS=0 (and no rule enabled it)
	ReasonUnsupportedProtocol               // a protocol or socket type goxio does not offload
	ReasonInterfaceBusy                     // the interface has another XDP program (another process owns it)
	ReasonNoCapabilities                    // the process lacks CAP_NET_ADMIN, CAP_NET_RAW or CAP_BPF for AF_XDP
	ReasonNoXDP                             // the interface or the kernel supports no XDP or AF_XDP mode
)

var reasonNames = [...]string{"none", "rule", "no faster path", "unsupported option",
	"resources", "forked child", "disabled by VMA_OFFLOADED_SOCKETS", "unsupported protocol",
	"interface busy (another XDP program)", "missing capabilities for AF_XDP", "no XDP support"}

// String returns a short human-readable reason, or "reason(N)" for a value
// this version does not know.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// TCPState is a TCP connection state in Linux numbering (include/net/tcp_states.h),
// so netstat-like output reads the same as the kernel's.
type TCPState uint8

// TCP states; TCPNone is a socket without a TCP state (UDP, or unknown).
const (
	TCPNone TCPState = iota
	TCPEstablished
	TCPSynSent
	TCPSynRecv
	TCPFinWait1
	TCPFinWait2
	TCPTimeWait
	TCPClose
	TCPCloseWait
	TCPLastAck
	TCPListen
	TCPClosing
)

var tcpStateNames = [...]string{"", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
	"FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"}

// String returns the netstat spelling of the state ("" for TCPNone).
func (s TCPState) String() string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "STATE(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (s TCPState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Counter names one per-socket counter word. The offloaded and kernel ("OS")
// variants of a counter are 4 words apart.
type Counter uint8

// Socket counters. Each comment says when the counter increments.
const (
	CtrRxPackets     Counter = iota // a receive call on the fast path returned data (recvmmsg: per message)
	CtrRxBytes                      // bytes returned by those calls
	CtrRxEAGAIN                     // a receive call on the fast path returned EAGAIN/EWOULDBLOCK
	CtrRxErrors                     // a receive call on the fast path failed with another errno
	CtrRxOSPackets                  // a receive call served by the kernel socket returned data
	CtrRxOSBytes                    // bytes returned by those calls
	CtrRxOSEAGAIN                   // a kernel receive call returned EAGAIN/EWOULDBLOCK
	CtrRxOSErrors                   // a kernel receive call failed with another errno
	CtrTxPackets                    // a send call on the fast path succeeded (sendmmsg: per message)
	CtrTxBytes                      // bytes accepted by those calls
	CtrTxEAGAIN                     // a send call on the fast path returned EAGAIN/EWOULDBLOCK
	CtrTxErrors                     // a send call on the fast path failed with another errno
	CtrTxOSPackets                  // a send call served by the kernel socket succeeded
	CtrTxOSBytes                    // bytes accepted by those calls
	CtrTxOSEAGAIN                   // a kernel send call returned EAGAIN/EWOULDBLOCK
	CtrTxOSErrors                   // a kernel send call failed with another errno
	CtrTxDrops                      // an outgoing packet was dropped after its send call succeeded
	CtrRxDropPackets                // an incoming datagram was dropped: receive queue over its limit
	CtrRxDropBytes                  // bytes of those datagrams
	CtrPollHit                      // a blocking receive found data while busy-polling
	CtrPollMiss                     // a blocking receive polled in vain and went to sleep
	CtrRetransmits                  // a TCP segment was retransmitted
	CtrRxZcopy                      // a receive call handed a datagram over in place, held until freed (VMA's recvfrom_zcopy)
	numSocketCounters
)

// osDelta is the distance between a fast-path counter and its kernel twin.
const osDelta = CtrRxOSPackets - CtrRxPackets

// RingCounter names one per-ring counter word.
type RingCounter uint8

// Ring counters.
const (
	RingRxPackets    RingCounter = iota // a packet was taken from the receive ring
	RingRxBytes                         // bytes of those packets
	RingTxPackets                       // a packet was put on the transmit ring
	RingTxBytes                         // bytes of those packets
	RingRxDrops                         // a received packet was dropped (no socket, no buffer, bad frame)
	RingTxDrops                         // a packet could not be put on the transmit ring (full)
	RingWakeRequests                    // a consumer armed the doorbell before sleeping
	RingWakeSent                        // a producer rang the doorbell (one wake syscall)
	RingRetransmits                     // a TCP segment was retransmitted through this ring
	// The kernel's statistics of an AF_XDP socket (getsockopt XDP_STATISTICS), added as they
	// grow; they live in their own words of the slot (after the queue gauges).
	RingXDPRxDropped      // the kernel dropped a received frame (for another reason than the ones below)
	RingXDPRxInvalidDescs // the kernel found an invalid descriptor on the fill ring
	RingXDPTxInvalidDescs // the kernel found an invalid descriptor on the TX ring
	RingXDPRxRingFull     // the kernel dropped a received frame: the RX ring was full
	RingXDPFillRingEmpty  // a frame arrived while the fill ring was empty
	RingXDPTxRingEmpty    // the kernel was asked to send and found the TX ring empty
	numRingCounters
)

// IomuxKind is the kind of an iomux block.
type IomuxKind uint8

// Iomux kinds.
const (
	IomuxSelect IomuxKind = iota // select, pselect
	IomuxPoll                    // poll, ppoll
	IomuxEpoll                   // one epoll fd: epoll_wait, epoll_pwait, epoll_pwait2
)

var iomuxNames = [...]string{"select", "poll", "epoll"}

// String returns "select", "poll" or "epoll".
func (k IomuxKind) String() string {
	if int(k) < len(iomuxNames) {
		return iomuxNames[k]
	}
	return "iomux(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (k IomuxKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// IomuxCounter names one per-iomux counter word.
type IomuxCounter uint8

// Iomux counters.
const (
	IomuxCalls        IomuxCounter = iota // the call was made
	IomuxPollHit                          // the call found ready fds while busy-polling
	IomuxPollMiss                         // the call polled in vain and went to sleep
	IomuxTimeouts                         // the call returned 0
	IomuxErrors                           // the call returned -1
	IomuxOSReady                          // ready kernel fds returned (sum over calls)
	IomuxOffloadReady                     // ready offloaded fds returned (sum over calls)
	numIomuxCounters
)

// GlobalCounter names one process-wide counter word.
type GlobalCounter uint8

// Global counters. The writer maintains the ones marked "auto"; the engine
// adds the others with Global.Add.
const (
	GlobalSocketsOpened       GlobalCounter = iota // auto: Writer.Open gave a slot
	GlobalSlotsExhausted                           // auto: Writer.Open found no free slot (raise VMA_STATS_FD_NUM)
	GlobalRingsExhausted                           // auto: OpenRing found no free slot
	GlobalPoolsExhausted                           // auto: OpenPool found no free slot
	GlobalEpollsExhausted                          // auto: OpenEpoll found no free slot
	GlobalGroupsExhausted                          // auto: JoinGroup found the group table full
	GlobalFinalFileErrors                          // auto: appending to VMA_STATS_FILE failed
	GlobalCommandsApplied                          // auto: PollCommands ran a reader command
	GlobalOffloaded                                // auto: SetTransport moved a socket to a fast path
	GlobalFallbacks                                // auto: SetTransport put a socket on the kernel with a reason
	GlobalForks                                    // the process forked (counted in the parent)
	GlobalTCPSegAllocFailures                      // the user-space TCP stack could not allocate a segment
	GlobalKernelFromStart                          // sockets the preload library kept on the kernel without the engine (late.c): a connect or first send to a destination without goxio
	GlobalEarlyClosed                              // TCP connections between goxio processes closed in their early phase, served by the preload library alone (early.c)
	GlobalCrowdSleeps                              // spins the engine ended because the machine had more runnable threads than CPUs: the waits slept instead (offload/internal/wait/crowd.go)
	numGlobalCounters
)

// CommandKind is a reader command posted into the segment.
type CommandKind uint8

// Commands.
const (
	CmdNone          CommandKind = iota
	CmdSetLogLevel               // arg1: level (VMA numbering, -1 none .. 8 all)
	CmdSetLogDetails             // arg1: 0..3
	CmdDumpFD                    // arg1: fd (-1 all), arg2: log level
)
