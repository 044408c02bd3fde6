// Package pairsc runs the preload library's pairing-table code (shim/preload/pairs.c, built
// into this package by pairs.c) from Go, so that its tests can check it against offload/shm's
// Pairs on one table. The library itself never uses this package.
package pairsc

/*
#cgo CFLAGS: -D_GNU_SOURCE -O1 -Wall
#include <stdint.h>
#include <sys/socket.h>
#include "../../shim/preload/pairs.h"
*/
import "C"

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// State values of Lookup (GOXIO_PAIR_* in pairs.h).
const (
	None  = C.GOXIO_PAIR_NONE
	Known = C.GOXIO_PAIR_KNOWN
	Ready = C.GOXIO_PAIR_READY
)

// sockaddr returns a as a sockaddr_in (v4 true and a an IPv4 address) or sockaddr_in6.
func sockaddr(a netip.AddrPort, v4 bool) []byte {
	if v4 && a.Addr().Is4() {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.LittleEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], a.Port())
		ip := a.Addr().As4()
		copy(b[4:], ip[:])
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.LittleEndian.PutUint16(b[0:], unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	ip := a.Addr().As16()
	copy(b[8:], ip[:])
	return b
}

// key makes the C key of client -> server, each given as a sockaddr_in when v4 says so (and it
// is IPv4), else as a sockaddr_in6.
//
// Invariant: the sockaddrs are Go byte slices that C reads during the call only and that hold
// no Go pointers; the key is a C-layout struct on this stack.
func key(client, server netip.AddrPort, v4 bool) (C.struct_goxio_pair_key, bool) {
	var k C.struct_goxio_pair_key
	c, s := sockaddr(client, v4), sockaddr(server, v4)
	ok := C.goxio_pair_key_of(&k, (*C.struct_sockaddr)(unsafe.Pointer(&c[0])), C.socklen_t(len(c)),
		(*C.struct_sockaddr)(unsafe.Pointer(&s[0])), C.socklen_t(len(s))) != 0
	return k, ok
}

// words returns the address of the table's first word.
//
// Invariant: mem is a shared mapping (offload/shm's Pairs), not Go heap memory: C may keep
// using it during the call, and the Go side accesses it with atomics only.
func words(mem []uint64) *C.uint64_t { return (*C.uint64_t)(unsafe.Pointer(&mem[0])) }

// Register registers client -> server in the table mem for pid (start time start); the slot
// (-1: none) and the entry's word 0 as published.
func Register(mem []uint64, client, server netip.AddrPort, v4 bool, pid uint32, start uint64) (int, uint64) {
	k, ok := key(client, server, v4)
	if !ok {
		return -1, 0
	}
	var w C.uint64_t
	slot := C.goxio_pair_register(words(mem), &k, C.uint32_t(pid), C.uint64_t(start), &w)
	return int(slot), uint64(w)
}

// Lookup is what the table mem says of client -> server.
func Lookup(mem []uint64, client, server netip.AddrPort, v4 bool) int {
	k, ok := key(client, server, v4)
	if !ok {
		return -1
	}
	return int(C.goxio_pair_lookup(words(mem), &k))
}

// Drop removes the registration slot/word.
func Drop(mem []uint64, slot int, word uint64) {
	C.goxio_pair_drop(words(mem), C.int(slot), C.uint64_t(word))
}
