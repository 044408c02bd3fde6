package packet

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolSTXCSUM is ETHTOOL_STXCSUM (linux/ethtool.h): set transmit checksum offload.
const ethtoolSTXCSUM = 0x17

// setTxChecksum turns transmit checksum offload of interface name on or off through SIOCETHTOOL
// on fd, a socket of the interface's namespace.
//
// Invariant: ifr.data points to ev, a Go value kept alive (runtime.KeepAlive) until the ioctl has
// returned; the kernel reads and writes ev only during the call, and ifr matches struct ifreq
// (16-byte name, then a pointer in the 24-byte union: 40 bytes on 64-bit Linux).
func setTxChecksum(fd int, name string, on bool) error {
	ev := struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM}
	if on {
		ev.data = 1
	}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], name)
	ifr.data = unsafe.Pointer(&ev)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ev)
	if errno != 0 {
		return errno
	}
	return nil
}
