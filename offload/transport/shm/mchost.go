package shm

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

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
// another peer) and looks for raw UDP sockets in /proc/net/raw, and skips the kernel send while
// that count equals the number of ring members. The count walks the kernel's whole UDP hash
// table (about 90 µs with 16384 buckets), so it stands for up to hostFullTTL; the number of
// memberships of the group on every interface (/proc/net/igmp, about 8 µs, read at least every
// hostCheckTTL while sending) tells in between whether a socket joined or left: any change
// counts again at once. A socket without goxio that joins the group while the sender skips gets
// the group's datagrams from the sender's next look on, at most hostCheckTTL after its join; one
// that binds the port without joining (it gets the group's datagrams through
// IP_MULTICAST_ALL) at most hostFullTTL after its bind. It may miss the datagrams of that
// interval, as a subscriber on another host misses those sent before the network learned of its
// join.

// hostCheckTTL is how long a look at the memberships stands, hostFullTTL a count of the
// kernel's sockets; hostRecheck is how long a count that found other receivers stands (their
// datagrams go through the kernel meanwhile, which is always right).
const (
	hostCheckTTL = 1e6   // ns
	hostFullTTL  = 100e6 // ns
	hostRecheck  = 10e6  // ns
)

// hostOnly reports whether a datagram to an IPv4 group sent by the socket fd leaves through the
// loopback interface: IP_MULTICAST_IF names a loopback address. (Set by interface index alone it
// reads as 0.0.0.0 and is not known: the kernel send stays.)
func hostOnly(fd int) bool {
	a, err := unix.GetsockoptInet4Addr(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF)
	return err == nil && a[0] == 127
}

// hostOnly6 reports whether a datagram to the IPv6 group never leaves the host: an
// interface-local group (ff01::/16, scope 1), which the kernel loops back to the host's members
// and never transmits (ip6_finish_output2). Linux's loopback interface carries no IPv6
// multicast unless configured to, so the interface a datagram leaves through tells nothing.
func hostOnly6(group netip.Addr) bool {
	return group.Is6() && group.IsMulticast() && group.As16()[1]&0x0f == 1
}

// hostState is a route's view of the kernel's receivers of its group; guarded by mu.
type hostState struct {
	mu       sync.Mutex
	served   bool         // the last count found only ring members
	counted  int64        // nanotime of the last count; 0: none
	joins    int          // memberships of the group at the last count
	okUntil  atomic.Int64 // nanotime until which the kernel send is skipped without a look
	noUntil  atomic.Int64 // nanotime until which the kernel send is made without a look
	checking atomic.Bool  // a thread is looking
}

// hostServed reports whether every kernel socket that would receive the route's datagrams gets
// them through a ring, looking at the kernel again when the last look is too old. One thread
// looks at a time; the others send through the kernel meanwhile (always right).
func (r *route) hostServed() bool {
	h := &r.host
	now := nanotime()
	if now < h.okUntil.Load() {
		return true
	}
	if now < h.noUntil.Load() || !h.checking.CompareAndSwap(false, true) {
		return false
	}
	defer h.checking.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	joins := groupJoins(r.group.Addr())
	fresh := h.counted != 0 && now-h.counted < hostFullTTL && joins >= 0 && joins == h.joins
	if !h.served && fresh && now-h.counted < hostRecheck {
		h.noUntil.Store(now + hostCheckTTL)
		return false
	}
	if !h.served || !fresh {
		// Memberships first: one that comes during the count is seen at the next look.
		n := kernelReceivers(r.group, r.from)
		h.served, h.counted, h.joins = n >= 0 && n == len(r.mc) && joins >= 0, now, joins
	}
	if h.served {
		h.okUntil.Store(now + hostCheckTTL)
	} else {
		h.okUntil.Store(0)
		h.noUntil.Store(now + hostCheckTTL)
	}
	return h.served
}

// groupJoins sums the memberships (users) of group on every interface in /proc/net/igmp
// (/proc/net/igmp6 for an IPv6 group); -1 when the table cannot be read.
func groupJoins(group netip.Addr) int {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	path := "/proc/net/igmp"
	if !group.Is4() {
		path = "/proc/net/igmp6"
	}
	b, err := readProc(path, *bp)
	*bp = b[:0]
	if err != nil {
		return -1
	}
	if !group.Is4() {
		return igmp6Users(b, group)
	}
	return igmpUsers(b, group)
}

// igmp6Users sums the users column of group's lines in /proc/net/igmp6 text ("%-4d %-15s %pi6
// %5d %08X %ld": index, device, group as 32 hex digits, users, ...); -1 when a line does not
// parse.
func igmp6Users(b []byte, group netip.Addr) int {
	g := group.As16()
	n := 0
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 || len(f[2]) != 32 {
			return -1
		}
		var a [16]byte
		for i := range 4 {
			v, ok := hexWord(f[2][i*8 : i*8+8])
			if !ok {
				return -1
			}
			binary.BigEndian.PutUint32(a[i*4:], v)
		}
		if a != g {
			continue
		}
		u, err := strconv.Atoi(string(f[3]))
		if err != nil || u < 0 {
			return -1
		}
		n += u
	}
	return n
}

// igmpUsers sums the Users column of group's lines in /proc/net/igmp text (group lines start
// with a tab: "\t\t\t\t%08X %5d ..."); -1 when such a line does not parse.
func igmpUsers(b []byte, group netip.Addr) int {
	g := group.As4()
	n := 0
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 || line[0] != '\t' {
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 2 {
			return -1
		}
		v, ok := hexWord(f[0])
		if !ok || len(f[0]) != 8 {
			return -1
		}
		var a [4]byte
		binary.NativeEndian.PutUint32(a[:], v)
		if a != g {
			continue
		}
		u, err := strconv.Atoi(string(f[1]))
		if err != nil || u < 0 {
			return -1
		}
		n += u
	}
	return n
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
	if !dst.Addr().Is4() {
		return kernelReceivers6(dst, src)
	}
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	b, err := readProc("/proc/net/raw", *bp)
	*bp = b[:0]
	if err != nil || rawUDP(b, 1) {
		return -1
	}
	b, err = readProc("/proc/net/udp", *bp)
	*bp = b[:0]
	if err != nil {
		return -1
	}
	n := countUDPGroup(b, dst, src, 1)
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

// kernelReceivers6 is kernelReceivers for an IPv6 group: the IPv6 sockets bound to dst's port on
// the wildcard or the group and not connected to another address; -1 when a raw IPv6 UDP socket
// would get a copy too, or a table cannot be read.
func kernelReceivers6(dst, src netip.AddrPort) int {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	b, err := readProc("/proc/net/raw6", *bp)
	*bp = b[:0]
	if err != nil || rawUDP(b, 4) {
		return -1
	}
	b, err = readProc("/proc/net/udp6", *bp)
	*bp = b[:0]
	if err != nil {
		return -1
	}
	return countUDPGroup(b, dst, src, 4)
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

// rawUDP reports whether a /proc/net/raw or raw6 table (addresses of words 32-bit words: 1 or
// 4) lists a raw socket of protocol UDP (its "port" is the protocol), which gets a copy of every
// UDP datagram; an unreadable line counts as one.
func rawUDP(b []byte, words int) bool {
	found := false
	procLines(b, func(local, _ []byte) {
		_, proto, ok := procAddr(local, words)
		if !ok || proto == unix.IPPROTO_UDP {
			found = true
		}
	})
	return found
}

// countUDPGroup counts the lines of /proc/net/udp (words 1, an IPv4 group) or udp6 (words 4, an
// IPv6 group) the kernel would deliver a datagram from src to the group dst to (bound to the port
// on the wildcard or the group, not connected elsewhere; memberships are not listed, so a socket
// on the port that did not join counts too). An unreadable line counts.
func countUDPGroup(b []byte, dst, src netip.AddrPort, words int) int {
	g, s := procForm(dst.Addr(), words), procForm(src.Addr(), words)
	n := 0
	procLines(b, func(local, rem []byte) {
		la, lport, ok1 := procAddr(local, words)
		ra, rport, ok2 := procAddr(rem, words)
		if !ok1 || !ok2 {
			n++
			return
		}
		if lport != dst.Port() || la != [16]byte{} && la != g {
			return
		}
		if ra != [16]byte{} && ra != s || rport != 0 && rport != src.Port() {
			return
		}
		n++
	})
	return n
}

// procForm is a as procAddr returns an address of words words: an IPv4 one in the first 4 bytes.
func procForm(a netip.Addr, words int) (out [16]byte) {
	if words == 1 {
		b := a.As4()
		copy(out[:], b[:])
		return out
	}
	return a.As16()
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
