package capture

import "unsafe"

// words views b as native-endian 64-bit words. Invariant: b comes from mmap (page-aligned, so
// 8-byte aligned) and stays mapped while the view is used: the session unmaps only under its
// mutex, after which no view of it is touched.
func words(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}
