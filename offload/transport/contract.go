package transport

import (
	"net/netip"
	"syscall"
	"time"
)

// The contract between the engine and its transports, in one place (as gVisor's
// pkg/tcpip/stack/registration.go does for its stack): what every transport implements, what
// each method promises, and what it does once its socket is closed. The engine holds a socket's
// transport as an Endpoint and nothing else; a transport that has no use for a hook embeds Base,
// whose methods do nothing and report "no answer of mine: the kernel's stands".
//
// Threads: every method may be called by several of the program's threads at once, and any of
// them may race with Finish (the last close) on another thread: after Finish, data calls fail
// with EBADF or go to the kernel socket, hooks do nothing and readiness methods add nothing to
// the kernel's answer (Bell -1, Mark nil).
//
// fd is always a kernel fd of the socket (any of its duplicates): the transport may make system
// calls on it but never closes it.

// Transport carries the data of the sockets assigned to it.
type Transport interface {
	// Kind names the transport in logs and statistics. It never changes for a transport value
	// (a socket that went back to the kernel keeps its transport; GaveUp says so).
	Kind() Kind
	// Transfer performs a data call (Op.Receive or Op.Send) with the semantics of the libc call:
	// the result, or the errno the call fails with.
	Transfer(c Call) (int, syscall.Errno)
}

// Router is a transport that sends some of its sockets' datagrams through the kernel and others
// through its own path: TransferVia also reports which one a call used, for the statistics.
type Router interface {
	Transport
	TransferVia(c Call) (n int, errno syscall.Errno, viaOS bool)
}

// Hooks are what the engine tells a transport about its socket, in the order the program's calls
// happen. Control calls are always made by the kernel socket (it owns ports, connections and
// options); unless said otherwise a hook is called after the kernel accepted the call.
type Hooks interface {
	// Bound: the kernel socket has a local address now (bind, connect or an implicit bind).
	Bound(fd int)
	// Connected: a datagram socket was connected to peer, or disconnected (the zero value).
	Connected(fd int, peer netip.AddrPort)
	// BeforeData is called before every data call of a stream socket (never of a datagram one:
	// the per-datagram path has no call to spare): a connection learns there, lazily, that it
	// is established.
	BeforeData(fd int)
	// OptionSet: the program set an option; a transport that follows one reads it back from fd.
	OptionSet(fd, level, name int)
	// OptionValue corrects what getsockopt read from the kernel for an option the transport
	// owns: val is the program's buffer as the kernel filled it, at most 4 bytes.
	OptionValue(level, name int, val []byte)
	// Join and Leave: the program joined or left a multicast group (source: for one source).
	Join(fd int, group, source netip.Addr)
	Leave(group, source netip.Addr)
	// Shutdown is called before the kernel's shutdown, with how as the program passed it
	// (possibly invalid: then the kernel fails the call and the hook must change nothing).
	Shutdown(fd, how int)
	// Ioctl answers FIONREAD and SIOCOUTQ (req) from the transport's queues; false: the kernel
	// answers. The engine writes the value to the program.
	Ioctl(fd int, req uint32) (int, bool)
	// Queues are the bytes queued to receive and to send, for the statistics; false: none known.
	Queues() (rx, tx int, ok bool)
	// GiveUp sends the socket back to the kernel for good, r saying why: from now on its data
	// calls go to the kernel socket (after what the transport holds already). Idempotent.
	GiveUp(r Reason)
	// GaveUp is the reason given to GiveUp, or ReasonNone.
	GaveUp() Reason
	// RestoreOptions undoes, once the socket went back to the kernel, what the transport set on
	// the kernel socket for itself.
	RestoreOptions(fd int)
	// Fork is called in the parent before fork: the child shares the socket and cannot read
	// the transport's rings. The transport stops using them; it returns the datagrams it held
	// (source sockaddr, payload) for the engine to spill, and back true when the socket must go
	// back to the kernel for good (the engine then calls SetSpill when it spilled some, then
	// GiveUp). Until then a receive of the process that finds the rings empty waits: the
	// datagrams are never absent for it.
	Fork(fd int) (spill [][2][]byte, back bool)
	// SetSpill gives the transport the spill region made of what Fork returned, before GiveUp:
	// receives read it first, and threads asleep on the socket are woken to do so.
	SetSpill(region []byte)
	// Finish is called when the socket's last fd is closed, before the kernel closes it.
	Finish(fd int)
}

// Ready is a transport's part in select, poll and epoll (package offload/iomux) and in the
// engine's blocking waits. A waiter looks at the transport (Poll), spins with the polling
// budget holding spin marks (Spin, Mark: peers then skip their wake-ups), marks itself asleep
// (Sleep) before its last look, and sleeps in the kernel on the socket's fd (asking for
// KernelEvents) and on its doorbell (Bell); after the sleep it reports what rang (Rang).
type Ready interface {
	// Starting reports whether the socket will yet start to receive from the transport (it has
	// no inbox yet and did not give up): a blocking receive made now waits for that too.
	Starting() bool
	// Poll is the transport's answer to poll for fd: events are the ones asked for, kernel the
	// revents the kernel reported for fd in the same look (0 for a look at the rings only). ok is
	// false when the kernel's answer stands.
	Poll(fd int, events, kernel int16) (revents int16, ok bool)
	// KernelEvents are the events to ask the kernel for on fd while waiting for events.
	KernelEvents(events int16) int16
	// Arrivals grows with every arrival (a datagram, or received bytes): edge-triggered epoll
	// reports input again only when it changed.
	Arrivals(fd int) uint64
	// Ended reports that the stream's end of input was seen (edge-triggered epoll reports it
	// once).
	Ended() bool
	// Spin marks (on) or unmarks a thread polling the socket; every Spin(true) is followed by
	// one Spin(false) of the same thread.
	Spin(on bool)
	// Mark takes a spin mark that may outlive a call (epoll's awake marks); nil: none taken.
	// The holder gives it back with SpinEnd.
	Mark() Mark
	// Marked reports, after Sleep(true), whether a sleeper could miss its wake-up because spin
	// marks are held on the connection by others (the caller gave its own back) and the sleep
	// could not be registered: the sleeper then sleeps briefly and looks again.
	Marked() bool
	// Sleep marks (on) or unmarks a thread of ours asleep in the kernel waiting for the socket
	// (registering it with the peer, which then wakes it whatever marks are held); mark before
	// the last look. Every Sleep(true) is followed by one Sleep(false).
	Sleep(on bool)
	// Bell is an fd a sleeper also waits on for the transport (readable: look again), made on
	// first use; -1: none.
	Bell() int
	// Rang: a sleeper saw the doorbell readable (it is emptied once nothing is left to read).
	Rang()
	// Quiet empties the doorbell though data is unread (an edge-triggered member reported it).
	// With news (the caller reports an arrival), not while another thread of ours sleeps on the
	// socket (Sleep): the doorbell is its only wake-up, and the kernel reports an arrival to every
	// epoll set waiting on the socket; the caller must not count itself as a sleeper then. A set
	// that wakes with nothing new empties it whatever (no busy loop of sets that reported).
	Quiet(news bool)
}

// Mark is a spin mark taken with Ready.Mark.
type Mark interface {
	SpinEnd()
}

// Holder is a transport that can hand a received datagram over where it lies (VMA's
// recvfrom_zcopy), held for the program until it is released. Held records count against the
// socket's receive queue: a transport whose records are all held refuses new ones as a full
// receive buffer does. Closing the socket (Finish) releases every record it holds.
type Holder interface {
	// ReceiveHeld performs c, a recvfrom, except that a datagram the transport can hold is not
	// copied: h gets its address and token (h.Addr 0: the call copied, as TransferVia would).
	ReceiveHeld(c Call, h *Held) (n int, errno syscall.Errno, viaOS bool)
	// Release frees the records of tokens, after those the program freed through the socket's
	// box, and returns how many of tokens it freed (a token that names no record held now is
	// skipped) and how many records are held after it.
	Release(tokens []uint64) (freed, held int)
	// Prefetch queues in h.Box, after a receive on fd that copied its datagram, the datagrams
	// that wait now, as ReceiveHeld queues those after the one it hands over (Epoch, Queued and
	// QueuedLen say what it did). It reports whether the transport queues in boxes at all (with
	// h.Box 0 it only answers that).
	Prefetch(fd int, h *Held) bool
	// Unbox detaches the box of fd (Held.Box) when fd stops naming the socket.
	Unbox(fd int)
}

// NonblockWatcher is what a transport that lets the preload library answer some receives itself
// needs to hear of (shared-memory UDP: its kernel reads, which answer EAGAIN without the engine
// for a non-blocking socket): the socket's O_NONBLOCK changed (fcntl, ioctl FIONBIO).
type NonblockWatcher interface {
	NonblockChanged()
}

// Precounter is what a transport that counts datagrams as received before a receive takes them
// (those it queues in a box, counted at Prefetch or ReceiveHeld) offers: TakePrecounted reports,
// once per such datagram a receive of the engine took after all, that the engine must not count
// it again.
type Precounter interface {
	TakePrecounted() bool
}

// Held is a datagram ReceiveHeld handed over in place: the address of its payload in the
// process's memory (valid and unchanged until Release), its token, and how many records the
// socket holds with it. With Box (the preload library's struct goxio_zbox for the call's fd),
// the transport may also queue there the datagrams that wait after it, each held (Epoch: the
// box's, 0 when the transport does not use it; Queued and QueuedLen: how many it queued, their
// lengths).
type Held struct {
	Addr  uintptr
	Token uint64
	Now   int

	Box       uintptr
	Epoch     uint32
	Queued    int
	QueuedLen [MaxQueued]uint32
}

// MaxQueued is the most datagrams one ReceiveHeld queues (GOXIO_ZBOX_ENTRIES).
const MaxQueued = 32

// Pairing is what a connection transport that pairs with a peer process (shared-memory TCP)
// offers beyond Endpoint: the engine's judgement of the peer, and whether the connection will
// never leave the kernel.
type Pairing interface {
	// NoPeer tells a connecting socket that its peer is no goxio process: the connection never
	// pairs and every call goes to the kernel socket as it is. Nothing once pairing started.
	NoPeer()
	// GoxioPeer tells a connecting socket (local -> remote) that a goxio listener is at remote:
	// the connection pairs late (when it has shown it lives long enough) and the accepting end
	// learns from the pairing table that its peer is one of ours. false: it cannot (no table,
	// no room), and the connection never pairs, as after NoPeer.
	GoxioPeer(local, remote netip.AddrPort) bool
	// KernelForGood reports whether every call of the socket goes to the kernel socket as it
	// is, now and later (pairing is over without a segment, or both directions went back).
	KernelForGood() bool
	// Early tells a connection the preload library served in its early phase, just taken over,
	// what happened meanwhile (its data calls and the bytes they moved through the kernel, the
	// time since accept). Call it before the socket is shared.
	Early(p EarlyPhase)
}

// KernelFirst is what a datagram transport that serves sockets beside their kernel socket
// (shared-memory UDP) offers for a socket the preload library served before the engine took it
// over (shim/preload/early.c): the socket sent datagrams to dst through the kernel, so its first
// datagram to dst through the transport must not overtake them at the receiver.
type KernelFirst interface {
	SentThroughKernel(dst netip.AddrPort)
}

// EarlyPhase is what the preload library did on a TCP connection between goxio processes before
// it handed it to the engine (shim/preload/early.c): the connection's calls went to the kernel.
type EarlyPhase struct {
	Calls          int           // data calls, the one that hands it over included (connecting end)
	KernTx, KernRx uint64        // bytes sent and received through the kernel
	Age            time.Duration // since accept (accepting end)
	// NoPair: a data call may still have been in the kernel, so the counts may be short: the
	// connection must stay on the kernel.
	NoPair bool
	// ShutRead, ShutWrite: the program shut the connection down (shutdown(2) on the kernel).
	ShutRead, ShutWrite bool
}

// Endpoint is a socket's transport as the engine holds it.
type Endpoint interface {
	Router
	Hooks
	Ready
}

// Base is the no-op transport part: every hook does nothing, every readiness method reports
// nothing of its own. Transports embed it for the methods they have no use for.
type Base struct{}

// Bound does nothing.
func (Base) Bound(int) {}

// Connected does nothing.
func (Base) Connected(int, netip.AddrPort) {}

// BeforeData does nothing.
func (Base) BeforeData(int) {}

// OptionSet does nothing.
func (Base) OptionSet(int, int, int) {}

// OptionValue leaves the kernel's value.
func (Base) OptionValue(int, int, []byte) {}

// Join does nothing.
func (Base) Join(int, netip.Addr, netip.Addr) {}

// Leave does nothing.
func (Base) Leave(netip.Addr, netip.Addr) {}

// Shutdown does nothing.
func (Base) Shutdown(int, int) {}

// Ioctl lets the kernel answer.
func (Base) Ioctl(int, uint32) (int, bool) { return 0, false }

// Queues knows none.
func (Base) Queues() (int, int, bool) { return 0, 0, false }

// GiveUp does nothing: the socket is the kernel's.
func (Base) GiveUp(Reason) {}

// GaveUp is ReasonNone.
func (Base) GaveUp() Reason { return ReasonNone }

// RestoreOptions does nothing.
func (Base) RestoreOptions(int) {}

// Fork holds nothing.
func (Base) Fork(int) ([][2][]byte, bool) { return nil, false }

// SetSpill does nothing.
func (Base) SetSpill([]byte) {}

// Finish does nothing.
func (Base) Finish(int) {}

// Starting is false.
func (Base) Starting() bool { return false }

// Poll lets the kernel's answer stand.
func (Base) Poll(_ int, _, kernel int16) (int16, bool) { return kernel, false }

// KernelEvents are the events asked for.
func (Base) KernelEvents(events int16) int16 { return events }

// Arrivals is 0.
func (Base) Arrivals(int) uint64 { return 0 }

// Ended is false.
func (Base) Ended() bool { return false }

// Spin does nothing.
func (Base) Spin(bool) {}

// Mark takes none.
func (Base) Mark() Mark { return nil }

// Marked is false.
func (Base) Marked() bool { return false }

// Sleep does nothing.
func (Base) Sleep(bool) {}

// Bell is -1.
func (Base) Bell() int { return -1 }

// Rang does nothing.
func (Base) Rang() {}

// Quiet does nothing.
func (Base) Quiet(bool) {}

var (
	_ Hooks = Base{}
	_ Ready = Base{}
)
