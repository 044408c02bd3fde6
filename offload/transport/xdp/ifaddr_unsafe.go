package xdp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqSize is sizeof(struct ifreq) on Linux (16-byte name, 24-byte union).
const ifreqSize = 40

// ifconfReq is struct ifconf: a length and a pointer to the buffer.
type ifconfReq struct {
	len int32
	_   int32
	buf uintptr
}

// ifconf asks the kernel for every IPv4 address and its label (SIOCGIFCONF).
//
// Invariant: buf is Go memory handed to the kernel in the ioctl's argument list through req,
// which is converted with unsafe.Pointer in the Syscall call itself; buf is kept alive until the
// call returned (runtime.KeepAlive is implied by its use afterwards). The kernel writes at most
// req.len bytes.
func ifconf(fd int) ([]ifconfEntry, error) {
	buf := make([]byte, 64*ifreqSize)
	for range 4 {
		req := ifconfReq{len: int32(len(buf)), buf: uintptr(unsafe.Pointer(&buf[0]))}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFCONF, uintptr(unsafe.Pointer(&req)))
		if e != 0 {
			return nil, e
		}
		if int(req.len) >= len(buf) {
			buf = make([]byte, 2*len(buf)) // maybe truncated: ask again with more room
			continue
		}
		var out []ifconfEntry
		for off := 0; off+ifreqSize <= int(req.len); off += ifreqSize {
			r := buf[off : off+ifreqSize]
			name := r[:unix.IFNAMSIZ]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			sa := r[unix.IFNAMSIZ:]
			if binary.NativeEndian.Uint16(sa) != unix.AF_INET {
				continue
			}
			out = append(out, ifconfEntry{label: string(name), addr: netip.AddrFrom4([4]byte(sa[4:8]))})
		}
		return out, nil
	}
	return nil, unix.ENOBUFS
}
