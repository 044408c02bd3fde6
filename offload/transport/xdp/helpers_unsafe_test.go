package xdp

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// arena is memory outside the Go heap (an anonymous mapping) standing for the program's memory:
// the garbage collector never moves it, so its addresses can go into a Call as the program's
// pointers do.
//
// Invariant: every slice handed out aliases the mapping, which stays mapped until the test ends.
type arena struct {
	mem []byte
	off int
}

func newArena(t testing.TB) *arena {
	t.Helper()
	m, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return &arena{mem: m}
}

func (a *arena) alloc(n int) []byte {
	n = (n + 15) &^ 15
	if a.off+n > len(a.mem) {
		a.off = 0
	}
	b := a.mem[a.off : a.off+n : a.off+n]
	a.off += n
	clear(b)
	return b
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// sendto makes a sendto call through the transport.
func (s *tsock) sendto(a *arena, payload []byte, dst netip.AddrPort, flags int) (int, syscall.Errno, bool) {
	buf := a.alloc(max(len(payload), 1))
	copy(buf, payload)
	var sa uintptr
	var salen uintptr
	if dst.IsValid() {
		sb := a.alloc(unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(sb, unix.AF_INET)
		binary.BigEndian.PutUint16(sb[2:], dst.Port())
		ip := dst.Addr().As4()
		copy(sb[4:], ip[:])
		sa, salen = addr(sb), unix.SizeofSockaddrInet4
	}
	return s.u.TransferVia(transport.Call{Op: transport.OpSendto, FD: s.fd,
		A: [5]uintptr{addr(buf), uintptr(len(payload)), uintptr(flags), sa, salen}})
}

// recvfrom makes a recvfrom call through the transport into a buffer of size n and returns the
// bytes, the source and the call's result.
func (s *tsock) recvfrom(a *arena, n, flags int) ([]byte, netip.AddrPort, int, syscall.Errno, bool) {
	buf := a.alloc(max(n, 1))
	sb := a.alloc(unix.SizeofSockaddrInet4)
	lb := a.alloc(4)
	binary.NativeEndian.PutUint32(lb, unix.SizeofSockaddrInet4)
	r, errno, viaOS := s.u.TransferVia(transport.Call{Op: transport.OpRecvfrom, FD: s.fd,
		A: [5]uintptr{addr(buf), uintptr(n), uintptr(flags), addr(sb), addr(lb)}})
	if errno != 0 {
		return nil, netip.AddrPort{}, r, errno, viaOS
	}
	src := sockaddr4(sb)
	return append([]byte(nil), buf[:min(r, n)]...), src, r, 0, viaOS
}
