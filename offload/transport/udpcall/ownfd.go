package udpcall

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// highFD is where a receive's own copy of its socket goes: away from the low numbers the program
// expects to get from its own calls meanwhile.
const highFD = 1 << 10

// OwnFD is a blocking receive's own reference to its socket, as the kernel's receive holds its
// file: another thread closing the program's fd does not end the wait. The zero value holds
// none.
type OwnFD struct{ fd int }

// Take makes the reference before the call's first sleep (once) and has the call use it: c.FD
// becomes the copy. Without a free number the call keeps the program's fd.
func (o *OwnFD) Take(c *transport.Call) {
	if o.fd > 0 {
		return
	}
	if k, err := unix.FcntlInt(uintptr(c.FD), unix.F_DUPFD_CLOEXEC, highFD); err == nil {
		o.fd = k
		c.FD = k
	}
}

// Close drops the reference (when the call ends).
func (o *OwnFD) Close() {
	if o.fd > 0 {
		unix.Close(o.fd)
		o.fd = 0
	}
}
