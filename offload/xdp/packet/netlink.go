package packet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The engine's one netlink connection type: a vishvananda/netlink Handle with one NETLINK_ROUTE
// socket, opened once and kept (so no request opens a short-lived socket at a number the
// program could have expected to get), answers bounded by a timeout.

// answerTimeout bounds every wait for the kernel's answer (a deadline on the socket, served by
// the Go runtime's netpoller, which the engine starts with its descriptors high and internal).
const answerTimeout = 2 * time.Second

// Conn is a NETLINK_ROUTE connection bound to the network namespace of the thread that opened
// it. It is not safe for concurrent use.
type Conn struct {
	h   *netlink.Handle
	fds []int
}

// Open creates a Conn. Its socket is opened at once, at the lowest free number: a caller inside
// a program places it (see FDs) by opening it while the numbers below its range are held.
func Open() (*Conn, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink open: %w", err)
	}
	if err := h.SetSocketTimeout(answerTimeout); err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink open: timeout: %w", err)
	}
	fds, err := handleFDs(h)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink open: %w", err)
	}
	return &Conn{h: h, fds: fds}, nil
}

// FDs returns the descriptors the connection keeps open until Close (its socket).
func (c *Conn) FDs() []int { return c.fds }

// Close closes the connection. The Conn must not be used afterwards.
func (c *Conn) Close() error {
	if c.h != nil {
		c.h.Close()
		c.h, c.fds = nil, nil
	}
	return nil
}

// handle returns the open handle, or an error wrapping unix.EBADF after Close.
func (c *Conn) handle() (*netlink.Handle, error) {
	if c.h == nil {
		return nil, fmt.Errorf("netlink: connection closed: %w", unix.EBADF)
	}
	return c.h, nil
}

// kernelErr turns an error of the netlink library into one a caller can test with errors.Is:
// the kernel's errno when there is one (the library's own wording kept), ErrNetlink otherwise.
func kernelErr(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return err
	}
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return fmt.Errorf("%w: %w", err, unix.ENODEV)
	}
	return fmt.Errorf("%w: %w", err, ErrNetlink)
}

// ipOf converts a netlink address to the family of like (the zero Addr for none or another
// family).
func ipOf(ip net.IP, like netip.Addr) netip.Addr {
	if like.Is4() {
		if v4 := ip.To4(); v4 != nil {
			return netip.AddrFrom4([4]byte(v4))
		}
		return netip.Addr{}
	}
	if len(ip) == net.IPv6len && ip.To4() == nil {
		return netip.AddrFrom16([16]byte(ip))
	}
	return netip.Addr{}
}
