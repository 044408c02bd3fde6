package packet

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Addr is one IPv4 address of an interface.
type Addr struct {
	Ifindex int
	Addr    netip.Addr
}

// Addrs lists the IPv4 addresses of the connection's network namespace with their interfaces
// (RTM_GETADDR, the list `ip -4 addr` shows).
func (c *Conn) Addrs() ([]Addr, error) {
	h, err := c.handle()
	if err != nil {
		return nil, fmt.Errorf("address list: %w", err)
	}
	as, err := h.AddrList(nil, unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("address list: %w", kernelErr(err))
	}
	out := make([]Addr, 0, len(as))
	for _, a := range as {
		if a.IPNet == nil {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			out = append(out, Addr{Ifindex: a.LinkIndex, Addr: ip})
		}
	}
	return out, nil
}
