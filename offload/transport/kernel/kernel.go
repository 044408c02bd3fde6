// Package kernel is the os transport: every call is made on the socket's kernel fd with the
// system call libc would have made, so results, errno, blocking, timeouts (SO_RCVTIMEO,
// SO_SNDTIMEO), O_NONBLOCK, MSG_DONTWAIT and EINTR under SA_RESTART are the kernel's own.
package kernel

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// Transport carries data through the kernel's socket layer. Every hook and readiness method is
// the no-op one: the kernel socket itself is the whole state.
type Transport struct{ transport.Base }

var _ transport.Endpoint = Transport{}

// Kind is transport.KindOS.
func (Transport) Kind() transport.Kind { return transport.KindOS }

// Transfer performs the data call on the kernel socket.
func (Transport) Transfer(c transport.Call) (int, syscall.Errno) { return Do(&c) }

// TransferVia performs the data call on the kernel socket: always via the kernel.
func (Transport) TransferVia(c transport.Call) (int, syscall.Errno, bool) {
	n, errno := Do(&c)
	return n, errno, true
}

// numbers maps each operation to the system call libc makes for it (x86-64 and arm64 both have
// recvfrom/sendto as the implementation of recv/send). Operations without an entry have no
// system call of their own (valid marks the entries: read is number 0 on x86-64).
var numbers = [transport.OpMax]uintptr{
	transport.OpClose:       unix.SYS_CLOSE,
	transport.OpShutdown:    unix.SYS_SHUTDOWN,
	transport.OpBind:        unix.SYS_BIND,
	transport.OpListen:      unix.SYS_LISTEN,
	transport.OpAccept4:     unix.SYS_ACCEPT4,
	transport.OpConnect:     unix.SYS_CONNECT,
	transport.OpGetsockname: unix.SYS_GETSOCKNAME,
	transport.OpGetpeername: unix.SYS_GETPEERNAME,
	transport.OpSetsockopt:  unix.SYS_SETSOCKOPT,
	transport.OpGetsockopt:  unix.SYS_GETSOCKOPT,
	transport.OpRead:        unix.SYS_READ,
	transport.OpReadv:       unix.SYS_READV,
	transport.OpRecvfrom:    unix.SYS_RECVFROM,
	transport.OpRecvmsg:     unix.SYS_RECVMSG,
	transport.OpRecvmmsg:    unix.SYS_RECVMMSG,
	transport.OpWrite:       unix.SYS_WRITE,
	transport.OpWritev:      unix.SYS_WRITEV,
	transport.OpSendto:      unix.SYS_SENDTO,
	transport.OpSendmsg:     unix.SYS_SENDMSG,
	transport.OpSendmmsg:    unix.SYS_SENDMMSG,
	transport.OpSendfile:    unix.SYS_SENDFILE,
	transport.OpFcntl:       unix.SYS_FCNTL,
	transport.OpIoctl:       unix.SYS_IOCTL,
}

var valid = func() (v [transport.OpMax]bool) {
	for op := transport.OpClose; op <= transport.OpIoctl; op++ {
		v[op] = true
	}
	return v
}()

// Do performs any call on the kernel fd c.FD with the program's arguments.
func Do(c *transport.Call) (int, syscall.Errno) {
	if c.Op <= 0 || c.Op >= transport.OpMax || !valid[c.Op] {
		return -1, unix.ENOSYS
	}
	a := &c.A
	return sysc.Syscall6(numbers[c.Op], uintptr(c.FD), a[0], a[1], a[2], a[3], a[4])
}
