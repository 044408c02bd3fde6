package shmtcp

import (
	"golang.org/x/sys/unix"
)

// After our write switch the kernel connection carries only wake bytes, each of which must
// leave at once: Nagle's algorithm would hold a wake byte while the previous one is unacked
// (the peer's delayed ACK: up to 40 ms per wake-up), and TCP_CORK would hold it up to 200 ms.
// So at the switch the transport sets TCP_NODELAY and clears TCP_CORK on the kernel socket and
// keeps the program's own values, which getsockopt must report (TCPOption) and which later
// setsockopt calls change only there (OptionSet).

// tcpOpts are the program's TCP_NODELAY and TCP_CORK, once the transport owns the kernel's.
type tcpOpts struct {
	nodelay, cork int
}

// takeTCPOptions saves the program's values and sets the kernel's for wake bytes; txmu is held
// (called at the switch).
func (t *TCP) takeTCPOptions(fd int) {
	o := &tcpOpts{}
	o.nodelay, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	o.cork, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK)
	t.opts.Store(o)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if o.cork != 0 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK, 0)
	}
}

// tcpOptionSet follows a setsockopt of TCP_NODELAY or TCP_CORK after the switch: the kernel now
// holds the program's value; it is saved and the kernel's is set back.
func (t *TCP) tcpOptionSet(fd, name int) {
	o := t.opts.Load()
	if o == nil {
		return
	}
	v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, name)
	if err != nil {
		return
	}
	n := *o
	switch name {
	case unix.TCP_NODELAY:
		n.nodelay = v
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	case unix.TCP_CORK:
		n.cork = v
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK, 0)
	default:
		return
	}
	t.opts.Store(&n)
}

// TCPOption answers getsockopt(IPPROTO_TCP, TCP_NODELAY or TCP_CORK) with the program's value
// once the transport owns the kernel's; false: ask the kernel.
func (t *TCP) TCPOption(name int) (int, bool) {
	o := t.opts.Load()
	if o == nil {
		return 0, false
	}
	switch name {
	case unix.TCP_NODELAY:
		return o.nodelay, true
	case unix.TCP_CORK:
		return o.cork, true
	}
	return 0, false
}
