package xdp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant for everything in this file: each pointer handed to the kernel points to a
// Go variable (or, for the UMEM, to an anonymous mapping that is not Go memory) passed
// as unsafe.Pointer in the system call's own arguments, so it stays alive and unmoved
// for the call, and the length given with it is the size of that variable, so the
// kernel reads or writes nothing outside it.

// registerUMEM registers mem, a page-aligned anonymous mapping the garbage collector
// does not manage, as the UMEM of socket fd, split in frames of frameSize bytes. The
// kernel pins the pages; they must stay mapped until the socket is closed.
func registerUMEM(fd int, mem []byte, frameSize uint32) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))),
		Len:  uint64(len(mem)),
		Size: frameSize,
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return fmt.Errorf("setsockopt XDP_UMEM_REG: %w", e)
	}
	return nil
}

// getsockopt reads option opt of level SOL_XDP into the bytes of *v and returns how
// many the kernel wrote.
func getsockopt[T any](fd int, opt int, v *T) (int, error) {
	n := uint32(unsafe.Sizeof(*v))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// mmapOffsets returns where the four rings' indices, flags and entries lie in their
// mappings.
func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n, err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, &off)
	if err != nil {
		return off, fmt.Errorf("getsockopt XDP_MMAP_OFFSETS: %w", err)
	}
	if n != int(unsafe.Sizeof(off)) {
		// Kernels before 5.4 have no flags word (and no need_wakeup).
		return off, fmt.Errorf("getsockopt XDP_MMAP_OFFSETS: %d bytes, want %d: %w", n, unsafe.Sizeof(off), ErrNotSupported)
	}
	return off, nil
}

// kernelStats reads the socket's XDP_STATISTICS; counters an older kernel does not
// have stay 0.
func kernelStats(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	if _, err := getsockopt(fd, unix.XDP_STATISTICS, &st); err != nil {
		return st, fmt.Errorf("getsockopt XDP_STATISTICS: %w", err)
	}
	return st, nil
}

// socketOptions reads XDP_OPTIONS (XDP_OPTIONS_ZEROCOPY).
func socketOptions(fd int) (uint32, error) {
	var v uint32
	if _, err := getsockopt(fd, unix.XDP_OPTIONS, &v); err != nil {
		return 0, fmt.Errorf("getsockopt XDP_OPTIONS: %w", err)
	}
	return v, nil
}
