package shm

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"
)

// Host-only multicast. A datagram to a group that leaves through the loopback interface
// (IP_MULTICAST_IF a 127/8 address) reaches only sockets of this network namespace: the kernel
// gives a copy to every UDP socket bound to the group's port (on the wildcard or the group
// address) whose memberships admit it, and to raw UDP sockets. When every such kernel socket is
// a goxio member that gets a ring copy, the kernel's copies would all be dropped by their
// receivers (firstNotCopy): the sender skips the kernel send (its cost, and two system calls
// per copy and member: the peek and the drop).
//
// The sender knows its ring members from discovery (a goxio socket that binds or joins changes
// the directory's generation before its call returns, so the next send sees it). Sockets without
// goxio are not in discovery: the sender counts the kernel's candidates in /proc/net/udp and
// /proc/net/udp6 (sockets bound to the port on the wildcard or the group, not connected to
// another peer) and looks for raw UDP sockets in /proc/net/raw; the kernel send is skipped while
// the last count, at most hostCheckTTL old, equalled the number of ring members. A socket without
// goxio that binds the port and joins the group while the sender skips gets the group's datagrams
// from the sender's next count on: it may miss those of the first hostCheckTTL after its join,
// as a subscriber on another host misses those sent before the network learned its join.

// hostCheckTTL is how long a count that found only ring members stands; hostRecheck how long
// one that found other receivers does (their datagrams go through the kernel meanwhile, which
// is always right).
const (
	hostCheckTTL = 1e6  // ns
	hostRecheck  = 10e6 // ns
)

// hostOnly reports whether a datagram to a group sent by the socket fd leaves through the
// loopback interface: IP_MULTICAST_IF names a loopback address. (Set by interface index alone it
// reads as 0.0.0.0 and is not known: the kernel send stays.)
func hostOnly(fd int) bool {
	a, err := unix.GetsockoptInet4Addr(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF)
	return err == nil && a[0] == 127
}

// hostServed reports whether every kernel socket that would receive the route's datagrams gets
// them through a ring, counting the kernel's sockets again when the last count is too old.
func (r *route) hostServed() bool {
	now := nanotime()
	if at := r.servedAt.Load(); at != 0 && now-at < hostCheckTTL {
		return true
	}
	if at := r.checkedAt.Load(); at != 0 && now-at < hostRecheck && r.servedAt.Load() == 0 {
		return false
	}
	n := kernelReceivers(r.dst, r.from)
	r.checkedAt.Store(now)
	if n >= 0 && n == len(r.mc) {
		r.servedAt.Store(now)
		return true
	}
	r.servedAt.Store(0)
	return false
}

// procBufs holds the buffers the /proc tables are read into: one allocation reused by every
// count (a sender counts up to a thousand times a second).
var procBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// kernelReceivers counts the UDP sockets of the namespace the kernel would consider for a
// datagram from src to the group dst: IPv4 sockets bound to dst's port on the wildcard or the
// group and not connected to another address, and every IPv6 socket on the port bound to the
// wildcard or the mapped group (it may be dual-stack). -1 when a raw UDP socket would get a copy
// too, or a table cannot be read.
func kernelReceivers(dst, src netip.AddrPort) int {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	b, err := readProc("/proc/net/raw", *bp)
	*bp = b[:0]
	if err != nil || rawUDP(b) {
		return -1
	}
	b, err = readProc("/proc/net/udp", *bp)
	*bp = b[:0]
	if err != nil {
		return -1
	}
	n := countUDP4(b, dst, src)
	b, err = readProc("/proc/net/udp6", *bp)
	*bp = b[:0]
	if err != nil {
		if err == unix.ENOENT {
			return n // no IPv6 in this kernel
		}
		return -1
	}
	return n + countUDP6(b, dst)
}

// readProc reads a whole /proc file into buf (grown as needed) with raw system calls (an os.File
// would start the Go netpoller in the program).
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer unix.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// procLines calls f with the first three fields of every line of a /proc/net table after its
// header (sl, local_address, rem_address).
func procLines(b []byte, f func(local, rem []byte)) {
	first := true
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if first {
			first = false
			continue
		}
		var fields [3][]byte
		k := 0
		for k < 3 {
			for len(line) > 0 && line[0] == ' ' {
				line = line[1:]
			}
			if len(line) == 0 {
				break
			}
			j := bytes.IndexByte(line, ' ')
			if j < 0 {
				j = len(line)
			}
			fields[k], line = line[:j], line[j:]
			k++
		}
		if k == 3 {
			f(fields[1], fields[2])
		}
	}
}

// procAddr parses a /proc/net address "HEX:PORT": the address words as the kernel printed them
// (%08X of each 32-bit word in memory order) and the port. ok is false for anything else.
func procAddr(s []byte, words int) (addr [16]byte, port uint16, ok bool) {
	if len(s) != words*8+5 || s[words*8] != ':' {
		return addr, 0, false
	}
	for w := range words {
		v, ok := hexWord(s[w*8 : w*8+8])
		if !ok {
			return addr, 0, false
		}
		binary.NativeEndian.PutUint32(addr[w*4:], v)
	}
	p, ok := hexWord(s[words*8+1:])
	return addr, uint16(p), ok && p <= 0xffff
}

func hexWord(s []byte) (uint32, bool) {
	var v uint32
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, len(s) > 0 && len(s) <= 8
}

// rawUDP reports whether /proc/net/raw lists a raw socket of protocol UDP (its "port" is the
// protocol), which gets a copy of every UDP datagram; an unreadable line counts as one.
func rawUDP(b []byte) bool {
	found := false
	procLines(b, func(local, _ []byte) {
		_, proto, ok := procAddr(local, 1)
		if !ok || proto == unix.IPPROTO_UDP {
			found = true
		}
	})
	return found
}

// countUDP4 counts the lines of /proc/net/udp the kernel would deliver a datagram from src to
// the group dst to (binding and connection; memberships are not listed, so a socket on the port
// that did not join counts too). An unreadable line counts.
func countUDP4(b []byte, dst, src netip.AddrPort) int {
	g, s := dst.Addr().As4(), src.Addr().As4()
	n := 0
	procLines(b, func(local, rem []byte) {
		la, lport, ok1 := procAddr(local, 1)
		ra, rport, ok2 := procAddr(rem, 1)
		if !ok1 || !ok2 {
			n++
			return
		}
		l, r := [4]byte(la[:4]), [4]byte(ra[:4])
		if lport != dst.Port() || l != [4]byte{} && l != g {
			return
		}
		if r != [4]byte{} && r != s || rport != 0 && rport != src.Port() {
			return
		}
		n++
	})
	return n
}

// countUDP6 counts the IPv6 sockets of /proc/net/udp6 on dst's port bound to the wildcard or to
// the IPv4-mapped group (whether they are IPv6-only is not listed: they count). An unreadable
// line counts.
func countUDP6(b []byte, dst netip.AddrPort) int {
	mapped := netip.AddrFrom4(dst.Addr().As4())
	m16 := netip.AddrFrom16(mapped.As16()).As16()
	n := 0
	procLines(b, func(local, _ []byte) {
		la, lport, ok := procAddr(local, 4)
		if !ok {
			n++
			return
		}
		if lport == dst.Port() && (la == [16]byte{} || la == m16) {
			n++
		}
	})
	return n
}
