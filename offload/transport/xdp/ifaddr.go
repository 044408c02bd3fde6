package xdp

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// ifAddr is one IPv4 address of an interface.
type ifAddr struct {
	ifindex int
	addr    netip.Addr
}

// addrsLocked lists the IPv4 addresses of this network namespace with their interfaces
// (SIOCGIFCONF, then the interface of each label); e.mu is held (for the netlink connection).
func (e *Env) addrsLocked() ([]ifAddr, error) {
	nl, err := e.nlLocked()
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	defer unix.Close(fd)
	entries, err := ifconf(fd)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	index := map[string]int{}
	var out []ifAddr
	for _, en := range entries {
		name, _, _ := strings.Cut(en.label, ":") // an alias label names its interface first
		idx, ok := index[name]
		if !ok {
			l, err := nl.LinkByName(name)
			if err != nil {
				continue // gone meanwhile
			}
			idx = l.Index
			index[name] = idx
		}
		out = append(out, ifAddr{ifindex: idx, addr: en.addr})
	}
	return out, nil
}

// ifconfEntry is one entry of SIOCGIFCONF: an address and its label.
type ifconfEntry struct {
	label string
	addr  netip.Addr
}
