package udpcall

import (
	"github.com/goxio/goxio/offload/internal/sysc"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// RecvOne receives one datagram for a message of recvmmsg: sub is its recvmsg call, rc its parsed
// buffers; nonblock says whether it may wait. It reports the bytes, the error, and whether the
// datagram came from the kernel socket.
type RecvOne func(sub *transport.Call, rc *Rx, nonblock bool) (int, syscall.Errno, bool)

// Recvmmsg serves recvmmsg(fd, vec, vlen, flags, timeout) on a UDP socket as the kernel does:
// each message is one recvmsg through recv (MSG_WAITFORONE makes the ones after the first
// non-blocking), the timeout is checked after each message, the first error is reported only
// when no message was received. Calls the user-space paths cannot serve (flags only the kernel
// serves, too many messages or iovecs) go to kernel. sockNonblock is the socket's O_NONBLOCK.
func Recvmmsg(c *transport.Call, sockNonblock bool, recv RecvOne, kernel func(*transport.Call) (int, syscall.Errno, bool)) (int, syscall.Errno, bool) {
	vlen, flags := int(uint32(c.A[1])), int(int32(c.A[2]))
	if flags&KernelRecvFlags != 0 || vlen > umem.MaxIov {
		return kernel(c)
	}
	var deadline int64
	if c.A[3] != 0 {
		ts := umem.Timespec(c.A[3])
		if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
			return -1, unix.EINVAL, false
		}
		deadline = sysc.Nanotime() + ts.Sec*1e9 + ts.Nsec
	}
	nonblock := sockNonblock || flags&unix.MSG_DONTWAIT != 0
	var arr [MaxBufs][]byte
	count := 0
	viaOS := false
	for i := 0; i < vlen; i++ {
		mp, lenp := umem.Mmsghdr(c.A[0], i)
		rc, ok := ParseMsg(mp, flags&^unix.MSG_WAITFORONE, arr[:0])
		if !ok {
			if count == 0 {
				return kernel(c)
			}
			break
		}
		sub := transport.Call{Op: transport.OpRecvmsg, FD: c.FD, A: [5]uintptr{mp, uintptr(rc.Flags)}}
		n, errno, os := recv(&sub, &rc, nonblock || (count > 0 && flags&unix.MSG_WAITFORONE != 0))
		if errno != 0 {
			if count > 0 {
				break
			}
			return -1, errno, os
		}
		viaOS = viaOS || os
		*lenp = uint32(n)
		count++
		if deadline != 0 && sysc.Nanotime() >= deadline {
			break
		}
	}
	return count, 0, viaOS
}
