package main

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"net/netip"
	"syscall"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// goxio_go_vma_macs serves the Ethernet part of VMA's get_socket_network_header: the destination
// and source MAC addresses (in the low 48 bits of *dstMAC and *srcMAC, first byte highest) of the
// frames from src to dst (IPv4 addresses, first byte highest), as the kernel's route and neighbour
// tables give them: the next hop's and the outgoing interface's; zero for a destination on this
// host (loopback frames carry zero MACs). 0, -ENETUNREACH without a route, -EHOSTUNREACH while the
// next hop is not resolved, -errno of netlink otherwise.
//
//export goxio_go_vma_macs
func goxio_go_vma_macs(src, dst C.uint32_t, dstMAC, srcMAC *C.uint64_t) C.long {
	d, m, err := macsTo(addr4(uint32(src)), addr4(uint32(dst)))
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return -C.long(errno)
		}
		return -C.long(syscall.EIO)
	}
	*dstMAC, *srcMAC = C.uint64_t(mac48(d)), C.uint64_t(mac48(m))
	return 0
}

// macsTo looks up the next hop's and the outgoing interface's MAC addresses from src to dst.
func macsTo(src, dst [4]byte) (packet.MAC, packet.MAC, error) {
	var none packet.MAC
	if dst[0] == 127 {
		return none, none, nil
	}
	nl, err := packet.Open()
	if err != nil {
		return none, none, err
	}
	defer nl.Close()
	rt, err := nl.RouteGet(netip.AddrFrom4(dst), netip.AddrFrom4(src), 0)
	if err != nil {
		return none, none, syscall.ENETUNREACH
	}
	switch rt.Type {
	case packet.RouteLocal:
		return none, none, nil
	case packet.RouteMulticast:
		return packet.MulticastMAC(dst), rt.Link.MAC, nil
	}
	n, err := nl.NeighGet(rt.Ifindex, rt.NextHop())
	if err != nil || n.Resolution() == packet.Unresolved {
		return none, none, syscall.EHOSTUNREACH
	}
	return n.MAC, rt.Link.MAC, nil
}

func addr4(v uint32) [4]byte { return [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

func mac48(m packet.MAC) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}
