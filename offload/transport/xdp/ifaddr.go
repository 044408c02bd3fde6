package xdp

import (
	"fmt"
	"net/netip"
)

// ifAddr is one IPv4 or IPv6 address of an interface.
type ifAddr struct {
	ifindex int
	addr    netip.Addr
}

// addrsLocked lists the IPv4 and IPv6 addresses of this network namespace with their interfaces
// (netlink RTM_GETADDR); e.mu is held (for the netlink connection).
func (e *Env) addrsLocked() ([]ifAddr, error) {
	nl, err := e.nlLocked()
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	as, err := nl.Addrs()
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	out := make([]ifAddr, len(as))
	for i, a := range as {
		out[i] = ifAddr{ifindex: a.Ifindex, addr: a.Addr}
	}
	return out, nil
}
