package umem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// unsafeBytes views an iovec slice as bytes (test helper; the slice outlives its use).
func unsafeBytes(iov []unix.Iovec) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&iov[0])), len(iov)*int(unsafe.Sizeof(iov[0])))
}
