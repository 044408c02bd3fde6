package xdp

import (
	"bytes"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw bpf(2) commands for reading a program's id and name. cilium/ebpf's
// Program.Info also reads /proc/self/fdinfo through an os.File, which would start the
// Go netpoller inside the host program, so these two queries are made here.
const (
	bpfProgGetFDByID  = 13
	bpfObjGetInfoByFD = 15
)

// bpfProgInfo is the head of struct bpf_prog_info (linux/bpf.h) up to the name; the
// kernel fills at most infoLen bytes of it.
type bpfProgInfo struct {
	Type            uint32
	ID              uint32
	Tag             [8]byte
	JitedProgLen    uint32
	XlatedProgLen   uint32
	JitedProgInsns  uint64
	XlatedProgInsns uint64
	LoadTime        uint64
	CreatedByUID    uint32
	NrMapIDs        uint32
	MapIDs          uint64
	Name            [16]byte
}

// objInfoAttr is the BPF_OBJ_GET_INFO_BY_FD attribute.
type objInfoAttr struct {
	FD      uint32
	InfoLen uint32
	Info    uint64
}

// progInfo returns the id and name of the BPF program behind fd.
//
// Invariant for the unsafe use: attr is passed as unsafe.Pointer in the call's
// arguments, so it stays alive and unmoved during the call. info is reached only
// through the integer attr.Info: it is a local variable read after the call (so it is
// alive), and no function call separates taking its address from the nosplit
// system-call wrapper (so the stack cannot grow and move it in between); the kernel
// writes at most InfoLen = sizeof(info) bytes into it.
func progInfo(fd int) (uint32, string, error) {
	var info bpfProgInfo
	attr := objInfoAttr{FD: uint32(fd), InfoLen: uint32(unsafe.Sizeof(info)), Info: uint64(uintptr(unsafe.Pointer(&info)))}
	_, _, e := unix.Syscall(unix.SYS_BPF, bpfObjGetInfoByFD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e != 0 {
		return 0, "", fmt.Errorf("bpf program info: %w", e)
	}
	name := info.Name[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return info.ID, string(name), nil
}

// progNameByID returns the name of the loaded BPF program with the given id.
//
// Invariant for the unsafe use: attr is a Go variable alive for the system call.
func progNameByID(id uint32) (string, error) {
	attr := [3]uint32{id, 0, 0} // prog_id, next_id, open_flags
	fd, _, e := unix.Syscall(unix.SYS_BPF, bpfProgGetFDByID, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e != 0 {
		return "", fmt.Errorf("bpf program %d: %w", id, e)
	}
	defer unix.Close(int(fd))
	_, name, err := progInfo(int(fd))
	return name, err
}
