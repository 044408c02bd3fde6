package offload

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// Asynchronous mode (O_ASYNC, set by fcntl F_SETFL or ioctl FIOASYNC): the kernel sends the owner
// (F_SETOWN) a signal (SIGIO, or the one F_SETSIG chose, with si_fd and si_band) for every arrival
// of data on the kernel socket. Data that comes through a ring never reaches the kernel socket, so
// a socket in that mode uses the kernel for good: one not offloaded yet is never given rings, one
// that has them stops using them as at a fork (sendBack: a datagram socket's waiting datagrams
// are spilled and received first, in order; a connection goes back to the kernel connection in
// both directions, its peer at its next call). Data queued before the mode was set is not
// signalled by the kernel either; everything that arrives after goes through the kernel socket,
// which signals it. Clearing O_ASYNC later does not bring the rings back.

// fioasync is the FIOASYNC ioctl request (asm-generic value, used by x86-64 and arm64).
const fioasync = 0x5452

// asyncWhy is the log line's reason for sending a socket back.
const asyncWhy = "O_ASYNC: the kernel signals the data it receives"

// asyncCall reports whether the successful control call c put the socket in asynchronous mode.
func asyncCall(c *transport.Call) bool {
	switch c.Op {
	case transport.OpFcntl:
		return int(int32(c.A[0])) == unix.F_SETFL && int(c.A[1])&unix.O_ASYNC != 0
	case transport.OpIoctl:
		return uint32(c.A[0]) == fioasync && sysc.IntAt(c.A[1]) != 0
	}
	return false
}

// asyncOn records that s is in asynchronous mode and sends it back to the kernel if it has rings.
func (e *Engine) asyncOn(s *Socket) {
	if s.async.Swap(true) {
		return
	}
	if s.rings() == nil {
		return
	}
	t, ok := e.cfg.Table.(SpillTable)
	if !ok {
		// Only a test's table lacks spill regions; the rings' datagrams would be lost.
		e.log.Warn("O_ASYNC on a ring socket: the fd table keeps no spill regions, the socket keeps its rings")
		return
	}
	e.reg.mu.Lock()
	fds := slices.Clone(s.fds)
	e.reg.mu.Unlock()
	e.sendBack(s, fds, t, transport.ReasonUnsupported, asyncWhy)
}

// asyncMode reports whether s is in asynchronous mode: the engine saw it set, or, for a socket
// the engine did not see made, the kernel socket fd has O_ASYNC (set before the engine loaded, or
// before the socket was adopted).
func (s *Socket) asyncMode(fd int) bool {
	if s.async.Load() {
		return true
	}
	if s.born {
		return false // every F_SETFL and FIOASYNC since it was made went through control
	}
	fl, errno := sysc.FcntlInt(fd, unix.F_GETFL, 0)
	if errno != 0 || fl&unix.O_ASYNC == 0 {
		return false
	}
	s.async.Store(true)
	return true
}
