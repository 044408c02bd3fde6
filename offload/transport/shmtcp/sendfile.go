package shmtcp

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// sendfileChunk is how many file bytes one step of a sendfile through the ring reads.
const sendfileChunk = 64 << 10

// sendfile serves sendfile(out=socket, in_fd, *offset, count). Before the switch it is the
// kernel's. After it, chunks are read from in_fd with pread at the current offset (*offset, or
// in_fd's file position) and written into the ring; only what the ring accepted advances the
// offset (or the file position), as the kernel's sendfile does. An in_fd without pread
// (ESPIPE) fails with ESPIPE when an offset was given, EINVAL otherwise.
func (t *TCP) sendfile(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	t.txmu.Lock()
	defer t.txmu.Unlock()
	conn := t.sendRing(c.FD)
	if conn == nil {
		return t.kernelSend(c)
	}
	if t.tx.has(flagShut) {
		return -1, unix.EPIPE, false
	}
	in, offp, count := int(c.A[0]), c.A[1], int(c.A[2])
	var pos int64
	if offp != 0 {
		pos = *offAt(offp)
	} else {
		p, err := unix.Seek(in, 0, unix.SEEK_CUR)
		if err != nil {
			return -1, unix.EINVAL, false
		}
		pos = p
	}
	nonblock := t.nonblock()
	buf := make([]byte, min(count, sendfileChunk))
	sent := 0
	for sent < count {
		r, err := unix.Pread(in, buf[:min(count-sent, len(buf))], pos)
		if err != nil {
			if err == unix.ESPIPE && offp == 0 {
				err = unix.EINVAL // the kernel's ESPIPE is for an offset on an fd without pread
			}
			if sent > 0 {
				break
			}
			return -1, err.(syscall.Errno), false
		}
		if r == 0 {
			break
		}
		iov := [1][]byte{buf[:r]}
		d := dataCall{bufs: iov[:], total: r}
		m, e := t.ringSend(c.FD, conn, &d, nonblock)
		if m > 0 {
			sent += m
			pos += int64(m)
		}
		if e != 0 || m < r {
			if sent == 0 {
				return -1, e, false
			}
			break
		}
	}
	if offp != 0 {
		*offAt(offp) = pos
	} else if _, err := unix.Seek(in, pos, unix.SEEK_SET); err != nil {
		return -1, unix.EINVAL, false
	}
	return sent, 0, false
}
