package xdp

import (
	"bytes"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bpf(2) calls of the package, made directly. cilium/ebpf's map and program
// constructors look for a BPF token on first use by reading /proc/self/mountinfo
// through an os.File, and its Program.Info reads /proc/self/fdinfo the same way;
// either would start the Go netpoller inside the host program. Only its asm package
// (which assembles the program into bytes) is used by the library.
//
// Invariant for every unsafe use in this file: the attribute is a local variable
// passed as unsafe.Pointer in the system call's own arguments, so it stays alive and
// unmoved for the call. Buffers the attribute points to through integer fields (keys,
// values, instructions, license, log, info) are read or written only by the kernel
// during the call: each is alive until the runtime.KeepAlive after the call, and no
// function call separates computing their addresses from the nosplit system-call
// wrapper, so a stack copy cannot move them in between; the length passed with each is
// its own length (bpfCall and the wrappers under it are nosplit).

// bpf(2) commands, map and program types, attach type (linux/bpf.h).
const (
	bpfMapCreate      = 0
	bpfMapLookupElem  = 1
	bpfMapUpdateElem  = 2
	bpfMapDeleteElem  = 3
	bpfProgLoad       = 5
	bpfProgGetFDByID  = 13
	bpfObjGetInfoByFD = 15
	bpfLinkCreate     = 28

	bpfMapTypeHash    = 1
	bpfMapTypeXSKMap  = 17
	bpfProgTypeXDP    = 6
	bpfAttachTypeXDP  = 37
	bpfObjNameLen     = 16
	bpfNoExist        = 1 // BPF_NOEXIST
	bpfAny            = 0 // BPF_ANY
	verifierLogSize   = 1 << 20
	verifierLogLevel1 = 1
)

// bpfCall makes one bpf(2) call with the attribute at attr (size bytes). It is nosplit
// so that calling it cannot grow and move the stack between the caller computing the
// addresses in the attribute and the system call.
//
//go:nosplit
func bpfCall(cmd uintptr, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_BPF, cmd, uintptr(attr), size)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// objName copies a name into the kernel's fixed-size, NUL-terminated form.
func objName(s string) [bpfObjNameLen]byte {
	var n [bpfObjNameLen]byte
	copy(n[:bpfObjNameLen-1], s)
	return n
}

// mapCreate creates a map without BTF and returns its fd.
func mapCreate(typ, keySize, valueSize, maxEntries uint32, name string) (int, error) {
	attr := struct {
		Type, KeySize, ValueSize, MaxEntries, Flags, InnerMapFD, NumaNode uint32
		Name                                                              [bpfObjNameLen]byte
	}{Type: typ, KeySize: keySize, ValueSize: valueSize, MaxEntries: maxEntries, Name: objName(name)}
	fd, err := bpfCall(bpfMapCreate, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return -1, fmt.Errorf("bpf map create %s: %w", name, err)
	}
	return fd, nil
}

// mapElemAttr is the attribute of the map element commands.
type mapElemAttr struct {
	FD    uint32
	_     uint32
	Key   uint64
	Value uint64
	Flags uint64
}

// mapUpdate sets key to value in map fd (flags: bpfAny or bpfNoExist). key and value
// must have the map's key and value sizes.
func mapUpdate(fd int, key, value []byte, flags uint64) error {
	attr := mapElemAttr{FD: uint32(fd), Key: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(key)))),
		Value: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(value)))), Flags: flags}
	_, err := bpfCall(bpfMapUpdateElem, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return err
}

// mapLookup reads the value of key in map fd into value.
func mapLookup(fd int, key, value []byte) error {
	attr := mapElemAttr{FD: uint32(fd), Key: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(key)))),
		Value: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(value))))}
	_, err := bpfCall(bpfMapLookupElem, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return err
}

// mapDelete removes key from map fd.
func mapDelete(fd int, key []byte) error {
	attr := mapElemAttr{FD: uint32(fd), Key: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(key))))}
	_, err := bpfCall(bpfMapDeleteElem, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(key)
	return err
}

// progLoadAttr is the head of the BPF_PROG_LOAD attribute, up to expected_attach_type.
type progLoadAttr struct {
	Type               uint32
	InsnCnt            uint32
	Insns              uint64
	License            uint64
	LogLevel           uint32
	LogSize            uint32
	LogBuf             uint64
	KernVersion        uint32
	Flags              uint32
	Name               [bpfObjNameLen]byte
	Ifindex            uint32
	ExpectedAttachType uint32
}

// progLoadXDP loads an XDP program (raw instructions, 8 bytes each) and returns its
// fd. When the verifier refuses it, the load is repeated with a log, whose end goes
// into the error.
func progLoadXDP(insns []byte, name, license string) (int, error) {
	lic := append([]byte(license), 0)
	attr := progLoadAttr{Type: bpfProgTypeXDP, InsnCnt: uint32(len(insns) / 8),
		Insns:   uint64(uintptr(unsafe.Pointer(unsafe.SliceData(insns)))),
		License: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(lic)))),
		Name:    objName(name), ExpectedAttachType: bpfAttachTypeXDP}
	fd, err := bpfCall(bpfProgLoad, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(lic)
	if err == nil {
		return fd, nil
	}
	if err == unix.EPERM {
		return -1, fmt.Errorf("bpf program load %s: %w", name, err)
	}
	log := make([]byte, verifierLogSize)
	attr.LogLevel, attr.LogSize = verifierLogLevel1, uint32(len(log))
	attr.LogBuf = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(log))))
	fd, err2 := bpfCall(bpfProgLoad, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(lic)
	runtime.KeepAlive(log)
	if err2 == nil {
		return fd, nil // accepted with a log: a verifier that was interrupted before
	}
	if i := bytes.IndexByte(log, 0); i >= 0 {
		log = log[:i]
	}
	if len(log) > 2048 {
		log = log[len(log)-2048:]
	}
	return -1, fmt.Errorf("bpf program load %s: %w; verifier: %s", name, err, bytes.TrimSpace(log))
}

// linkCreateXDP attaches program progFD to interface ifindex with a bpf_link (flags:
// XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE) and returns the link's fd; the kernel
// detaches the program when the last reference to the link closes.
func linkCreateXDP(progFD, ifindex int, flags uint32) (int, error) {
	attr := [8]uint32{uint32(progFD), uint32(ifindex), bpfAttachTypeXDP, flags}
	return bpfCall(bpfLinkCreate, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
}

// bpfProgInfo is the head of struct bpf_prog_info up to the name; the kernel fills at
// most InfoLen bytes of it.
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
	Name            [bpfObjNameLen]byte
}

// progInfo returns the id and name of the BPF program behind fd.
func progInfo(fd int) (uint32, string, error) {
	var info bpfProgInfo
	attr := struct {
		FD, InfoLen uint32
		Info        uint64
	}{FD: uint32(fd), InfoLen: uint32(unsafe.Sizeof(info)), Info: uint64(uintptr(unsafe.Pointer(&info)))}
	_, err := bpfCall(bpfObjGetInfoByFD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(&info)
	if err != nil {
		return 0, "", fmt.Errorf("bpf program info: %w", err)
	}
	name := info.Name[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return info.ID, string(name), nil
}

// progNameByID returns the name of the loaded BPF program with the given id.
func progNameByID(id uint32) (string, error) {
	attr := [3]uint32{id, 0, 0} // prog_id, next_id, open_flags
	fd, err := bpfCall(bpfProgGetFDByID, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return "", fmt.Errorf("bpf program %d: %w", id, err)
	}
	defer unix.Close(fd)
	_, name, err := progInfo(fd)
	return name, err
}
