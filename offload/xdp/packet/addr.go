package packet

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Addr is one IPv4 or IPv6 address of an interface.
type Addr struct {
	Ifindex int
	Addr    netip.Addr
}

// Addrs lists the IPv4 and IPv6 addresses of the connection's network namespace with their
// interfaces (RTM_GETADDR, the list `ip addr` shows). IPv6 addresses that cannot receive yet or
// any more (tentative: duplicate address detection under way or failed) are left out, as the
// kernel delivers nothing to them.
func (c *Conn) Addrs() ([]Addr, error) {
	h, err := c.handle()
	if err != nil {
		return nil, fmt.Errorf("address list: %w", err)
	}
	as, err := h.AddrList(nil, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("address list: %w", kernelErr(err))
	}
	out := make([]Addr, 0, len(as))
	for _, a := range as {
		if a.IPNet == nil {
			continue
		}
		if v4 := a.IP.To4(); v4 != nil {
			out = append(out, Addr{Ifindex: a.LinkIndex, Addr: netip.AddrFrom4([4]byte(v4))})
			continue
		}
		if len(a.IP) != net.IPv6len || a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		out = append(out, Addr{Ifindex: a.LinkIndex, Addr: netip.AddrFrom16([16]byte(a.IP))})
	}
	return out, nil
}
