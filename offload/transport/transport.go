// Package transport defines what the socket layer asks of a transport, and the vocabulary shared
// by the engine, the transports and the statistics: operations, calls, transport kinds and the
// reasons a socket stays on the kernel.
//
// A transport carries the data of the sockets the engine gives it. It never decides which sockets
// it gets (the socket layer does, from the rules and what the peer is), and it knows nothing of
// fds beyond the kernel fd of each socket it serves.
package transport

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Op is an intercepted call, numbered as in shim/goxio.h (enum goxio_op); a test keeps both in
// step.
type Op int32

// The operations. Argument layouts (Call.A) follow the C prototypes of the calls.
const (
	OpSocket      Op = iota + 1 // A: domain, type, protocol; the kernel socket already exists as FD
	OpClose                     // no arguments
	OpShutdown                  // A: how
	OpBind                      // A: addr, addrlen
	OpListen                    // A: backlog
	OpAccept4                   // A: addr, *addrlen, flags
	OpConnect                   // A: addr, addrlen
	OpGetsockname               // A: addr, *addrlen
	OpGetpeername               // A: addr, *addrlen
	OpSetsockopt                // A: level, name, value, len
	OpGetsockopt                // A: level, name, value, *len
	OpRead                      // A: buf, len
	OpReadv                     // A: iov, iovcnt
	OpRecvfrom                  // A: buf, len, flags, addr, *addrlen (recv: addr == 0)
	OpRecvmsg                   // A: msghdr, flags
	OpRecvmmsg                  // A: mmsghdr, vlen, flags, timeout
	OpWrite                     // A: buf, len
	OpWritev                    // A: iov, iovcnt
	OpSendto                    // A: buf, len, flags, addr, addrlen (send: addr == 0)
	OpSendmsg                   // A: msghdr, flags
	OpSendmmsg                  // A: mmsghdr, vlen, flags
	OpSendfile                  // A: in fd, *offset, count
	OpFcntl                     // A: cmd, arg
	OpIoctl                     // A: request, arg
	OpDup                       // A: the new fd the kernel made (dup, dup2, dup3)
	OpForget                    // the fd was closed or replaced outside the engine
	OpPoll                      // FD -1; A: pollfd array, nfds, *timespec or 0, *sigset or 0
	OpSelect                    // FD -1; A: nfds, readfds, writefds, exceptfds, *goxio_select_args
	OpEpollCtl                  // FD the target; A: epfd, op, *epoll_event
	OpEpollWait                 // FD the epoll fd; A: events, maxevents, *timespec or 0, *sigset or 0
	OpZcopyRecv                 // A: *struct goxio_zcopy (VMA's recvfrom_zcopy)
	OpZcopyFree                 // A: tokens of records OpZcopyRecv handed over, their number (VMA's free_packets)
	OpMax
)

var opNames = [...]string{"", "socket", "close", "shutdown", "bind", "listen", "accept4", "connect",
	"getsockname", "getpeername", "setsockopt", "getsockopt", "read", "readv", "recvfrom", "recvmsg",
	"recvmmsg", "write", "writev", "sendto", "sendmsg", "sendmmsg", "sendfile", "fcntl", "ioctl", "dup",
	"forget", "poll", "select", "epoll_ctl", "epoll_wait", "zcopy_recv", "zcopy_free"}

// String names the operation as the libc call.
func (o Op) String() string {
	if o > 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Receive reports whether the operation reads data.
func (o Op) Receive() bool {
	return o == OpRead || o == OpReadv || o == OpRecvfrom || o == OpRecvmsg || o == OpRecvmmsg
}

// Send reports whether the operation writes data.
func (o Op) Send() bool {
	return o == OpWrite || o == OpWritev || o == OpSendto || o == OpSendmsg || o == OpSendmmsg || o == OpSendfile
}

// Call is one call as the program made it: the operation, the fd, and the raw arguments, which
// include pointers into the program's memory. Pointers are handed to the kernel (which checks
// them); the engine dereferences one only after the kernel accepted it.
type Call struct {
	Op Op
	FD int
	A  [5]uintptr
}

// RecvFlags is the flags argument of a recvfrom, recvmsg or recvmmsg call; 0 for other calls.
func (c *Call) RecvFlags() int {
	switch c.Op {
	case OpRecvfrom, OpRecvmmsg:
		return int(int32(c.A[2]))
	case OpRecvmsg:
		return int(int32(c.A[1]))
	}
	return 0
}

// Kind identifies a transport.
//
// String (kind_string.go, generated) returns the transport's short name: "os", "shm", "xdp".
type Kind uint8

// The transports.
const (
	// KindOS is the kernel's socket layer.
	KindOS Kind = iota // os
	// KindSHM is shared-memory rings between goxio processes on the host.
	KindSHM // shm
	// KindXDP is AF_XDP rings to the NIC.
	KindXDP // xdp
)

//go:generate go tool stringer -type=Kind -linecomment

// Reason says why a socket uses the kernel.
//
// String (reason_string.go, generated) returns the words the statistics and the logs show.
type Reason uint8

// The reasons.
const (
	// ReasonNone: not on the kernel, or no decision yet.
	ReasonNone Reason = iota // none
	// ReasonRule: a libvma.conf rule says os.
	ReasonRule // rule
	// ReasonNoFasterPath: offload allowed, but no transport faster than the kernel reaches the
	// peer.
	ReasonNoFasterPath // no faster path
	// ReasonUnsupported: the socket uses something the fast paths do not support.
	ReasonUnsupported // unsupported
	// ReasonResources: a resource limit (rings, memory, slots) was reached.
	ReasonResources // resources
	// ReasonDisabled: VMA_OFFLOADED_SOCKETS=0.
	ReasonDisabled // disabled
	// ReasonForkedChild: the process is a forked child of the one that started goxio.
	ReasonForkedChild // forked child
	// ReasonInterfaceBusy: the interface has another XDP program (another process owns it).
	ReasonInterfaceBusy // interface busy
	// ReasonNoCapabilities: the process lacks the capabilities AF_XDP needs.
	ReasonNoCapabilities // missing capabilities
	// ReasonNoXDP: the interface or the kernel supports no XDP or AF_XDP mode.
	ReasonNoXDP // no XDP support
	// ReasonUnsupportedProtocol: a family or protocol no fast path carries (IPv6 UDP).
	ReasonUnsupportedProtocol // unsupported protocol
)

//go:generate go tool stringer -type=Reason -linecomment

// SigCounters are the per-thread counts of the program's signal handlers that ran on a thread
// (shim/preload/signal.c's struct goxio_sig_counters): all of them, and those without SA_RESTART. Code
// that polls in user space, where no system call can be interrupted, watches them to return
// EINTR as a blocking system call would. Deferred counts the signals that came while the thread
// ran the engine's code: their handlers run when the call is back in C (a handler must not enter
// the engine on a thread that is inside it), so a wait they would not end (SA_RESTART) ends with
// ErrRestart, and the preload library runs them and makes the call again. Entry holds the three
// as they were when the call entered the engine (a handler after that came during the call, even
// before its wait started), and Wake is the timeout of the wait's next sleep, which a deferral
// zeroes (wait.Call.Arm). Read and write them with sync/atomic.
type SigCounters struct {
	All          uint32
	Interrupting uint32
	Deferred     uint32
	Entry        [3]uint32 // All, Interrupting, Deferred at the call's entry (goxio_sig_enter)
	Wake         unix.Timespec
}

// ErrRestart ends a wait that deferred signal handlers interrupted where the kernel would restart
// the call (SA_RESTART): the preload library runs the handlers, then calls again
// (GOXIO_ERR_RESTART in shim/preload/boundary.c). A call that made progress returns it instead,
// as after EINTR.
const ErrRestart = syscall.Errno(0x20000)
