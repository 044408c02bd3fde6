package discovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// ErrInvalid is returned by Publish for an entry that cannot be published
// (unknown family, port 0, addresses of the wrong family, a group that is not
// multicast, a bad inbox name).
var ErrInvalid = errors.New("invalid discovery entry")

// Entry is one offloaded UDP binding or one multicast membership of an
// offloaded UDP socket. A socket publishes one entry for its binding and one
// more per membership, all with the same Inbox (and the same binding
// fields); Lookup returns at most one entry per receiving socket.
type Entry struct {
	Family    int            // unix.AF_INET or unix.AF_INET6
	Local     netip.AddrPort // bound address (unspecified = wildcard) and port
	V6Only    bool
	ReuseAddr bool
	ReusePort bool
	Peer      netip.AddrPort // connected UDP: only datagrams from Peer are delivered; zero = any
	Group     netip.Addr     // multicast membership (zero for a plain binding)
	Source    netip.Addr     // source-specific membership: only from Source; zero = any
	Inbox     string         // the receiving socket's inbox name (<= 63 bytes)
	PID       int            // filled by Publish

	// NoMulticastAll is set when the socket turned IP_MULTICAST_ALL
	// (IPV6_MULTICAST_ALL) off. With the kernel's default (on), a socket
	// whose binding matches a multicast datagram receives it when any socket
	// of the namespace joined the group, even if it did not join itself.
	NoMulticastAll bool

	// MulticastSender is set on the binding of a socket that sends multicast to goxio
	// members through rings as well as through the kernel: a member that gets one of its
	// datagrams from the kernel's loopback got it from a ring too (see Dir.MulticastSender).
	MulticastSender bool

	// Stream marks a listening TCP socket of a goxio process (no UDP binding: UDP lookups
	// never return it; LookupListener does). Its Inbox is only a label.
	Stream bool

	// Lazy marks a listening TCP socket (Stream) that the preload library published from C
	// for its process before the engine loaded there (shim/preload/lazy_listen.c); the engine
	// takes it over when it adopts the socket (Dir.TakeOverListener).
	Lazy bool
}

// record is an entry as read from the table, with its bookkeeping.
type record struct {
	Entry
	start uint64 // owner's start time
	claim uint64 // claim number: bind order
}

// validInboxByte reports whether c may appear in an inbox name: the name is
// a file name in the shared directory, so no '/' and nothing a shell or a
// log would mangle.
func validInboxByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

func validInbox(s string) bool {
	if len(s) == 0 || len(s) > maxInbox || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !validInboxByte(s[i]) {
			return false
		}
	}
	return true
}

// normalize checks e and returns it in the form the table stores: zones
// dropped; an AF_INET socket's addresses plain IPv4; an AF_INET6 socket's
// local and peer addresses IPv6 (IPv4 given as ::ffff:a.b.c.d); groups and
// sources unmapped.
func normalize(e Entry) (Entry, error) {
	bad := func(what string) (Entry, error) {
		return Entry{}, fmt.Errorf("%w: %s", ErrInvalid, what)
	}
	sockAddr := func(a netip.Addr) (netip.Addr, bool) {
		if !a.IsValid() {
			return a, true
		}
		a = a.WithZone("")
		if e.Family == unix.AF_INET {
			a = a.Unmap()
			return a, a.Is4()
		}
		if a.Is4() {
			a = netip.AddrFrom16(a.As16())
		}
		return a, true
	}
	var ok bool
	switch e.Family {
	case unix.AF_INET:
		if e.V6Only {
			return bad("V6Only on an AF_INET socket")
		}
	case unix.AF_INET6:
	default:
		return bad(fmt.Sprintf("family %d", e.Family))
	}
	if e.Local.Port() == 0 {
		return bad("local port 0")
	}
	la, ok := sockAddr(e.Local.Addr())
	if !ok {
		return bad("local address " + e.Local.Addr().String() + " on an AF_INET socket")
	}
	e.Local = netip.AddrPortFrom(la, e.Local.Port())
	pa, ok := sockAddr(e.Peer.Addr())
	if !ok {
		return bad("peer address " + e.Peer.Addr().String() + " on an AF_INET socket")
	}
	e.Peer = netip.AddrPortFrom(pa, e.Peer.Port())
	if e.Group.IsValid() {
		e.Group = e.Group.WithZone("").Unmap()
		if !e.Group.IsMulticast() {
			return bad("group " + e.Group.String() + " is not multicast")
		}
		if e.Family == unix.AF_INET && !e.Group.Is4() {
			return bad("IPv6 group on an AF_INET socket")
		}
	}
	if e.Source.IsValid() {
		e.Source = e.Source.WithZone("").Unmap()
		if !e.Group.IsValid() {
			return bad("source without group")
		}
		if e.Source.Is4() != e.Group.Is4() {
			return bad("source and group of different families")
		}
	}
	if e.Lazy && !e.Stream {
		return bad("Lazy without Stream")
	}
	if !validInbox(e.Inbox) {
		return bad(fmt.Sprintf("inbox name %q", e.Inbox))
	}
	return e, nil
}

// putAddr stores a into words w[i], w[i+1] and returns its kind.
func putAddr(w []uint64, i int, a netip.Addr) uint64 {
	switch {
	case !a.IsValid():
		w[i], w[i+1] = 0, 0
		return kindNone
	case a.Is4():
		b := a.As4()
		w[i], w[i+1] = uint64(binary.LittleEndian.Uint32(b[:])), 0
		return kind4
	default:
		b := a.As16()
		w[i], w[i+1] = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
		return kind6
	}
}

// getAddr reads an address of the given kind from w[i], w[i+1].
func getAddr(w []uint64, i int, kind uint64) (netip.Addr, bool) {
	switch kind {
	case kindNone:
		return netip.Addr{}, w[i] == 0 && w[i+1] == 0
	case kind4:
		if w[i]>>32 != 0 || w[i+1] != 0 {
			return netip.Addr{}, false
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(w[i]))
		return netip.AddrFrom4(b), true
	case kind6:
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], w[i])
		binary.LittleEndian.PutUint64(b[8:], w[i+1])
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

// encode fills words 1..entryWords-1 of w (not the lock) from a normalized
// entry and its owner's identity.
func encode(w *[entryWords]uint64, e Entry, pid int, start, claim uint64) {
	var flags uint64
	if e.V6Only {
		flags |= fV6Only
	}
	if e.ReuseAddr {
		flags |= fReuseAddr
	}
	if e.ReusePort {
		flags |= fReusePort
	}
	if e.NoMulticastAll {
		flags |= fNoMulticastAll
	}
	if e.MulticastSender {
		flags |= fMulticastSender
	}
	if e.Stream {
		flags |= fStream
	}
	if e.Lazy {
		flags |= fLazy
	}
	w[eOwner] = uint64(uint32(pid)) | flags<<32
	w[eStart] = start
	w[eClaim] = claim
	kinds := putAddr(w[:], eLocal, e.Local.Addr()) |
		putAddr(w[:], ePeer, e.Peer.Addr())<<2 |
		putAddr(w[:], eGroup, e.Group)<<4 |
		putAddr(w[:], eSource, e.Source)<<6
	w[eMeta] = uint64(uint8(e.Family)) | uint64(len(e.Inbox))<<8 |
		uint64(e.Local.Port())<<16 | uint64(e.Peer.Port())<<32 | kinds<<48
	var name [64]byte
	copy(name[:], e.Inbox)
	for i := 0; i < 8; i++ {
		w[eInbox+i] = binary.LittleEndian.Uint64(name[i*8:])
	}
	for i := eEnd; i < entryWords; i++ {
		w[i] = 0
	}
}

// metaPort returns the local port from a meta word.
func metaPort(meta uint64) uint16 { return uint16(meta >> 16) }

// decode checks and decodes a copy of an occupied entry. Everything in it
// came from shared memory another process can write: any inconsistency
// makes it invalid (ok false), never a panic.
func decode(w *[entryWords]uint64) (r record, ok bool) {
	pid := uint32(w[eOwner])
	flags := w[eOwner] >> 32
	if pid == 0 || pid >= 1<<22 || flags&^fAllFlags != 0 {
		return record{}, false
	}
	meta := w[eMeta]
	family := int(uint8(meta))
	n := int(uint8(meta >> 8))
	kinds := meta >> 48
	if meta>>56 != 0 || n == 0 || n > maxInbox {
		return record{}, false
	}
	var e Entry
	e.Family = family
	e.PID = int(pid)
	e.V6Only = flags&fV6Only != 0
	e.ReuseAddr = flags&fReuseAddr != 0
	e.ReusePort = flags&fReusePort != 0
	e.NoMulticastAll = flags&fNoMulticastAll != 0
	e.MulticastSender = flags&fMulticastSender != 0
	e.Stream = flags&fStream != 0
	e.Lazy = flags&fLazy != 0
	la, ok1 := getAddr(w[:], eLocal, kinds&3)
	pa, ok2 := getAddr(w[:], ePeer, kinds>>2&3)
	g, ok3 := getAddr(w[:], eGroup, kinds>>4&3)
	s, ok4 := getAddr(w[:], eSource, kinds>>6&3)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return record{}, false
	}
	e.Local = netip.AddrPortFrom(la, metaPort(meta))
	e.Peer = netip.AddrPortFrom(pa, uint16(meta>>32))
	e.Group, e.Source = g, s
	var name [64]byte
	for i := 0; i < 8; i++ {
		binary.LittleEndian.PutUint64(name[i*8:], w[eInbox+i])
	}
	for _, c := range name[n:] {
		if c != 0 {
			return record{}, false
		}
	}
	e.Inbox = string(name[:n])
	// The decoded entry must be exactly what Publish would have stored.
	norm, err := normalize(e)
	if err != nil || norm != e {
		return record{}, false
	}
	return record{Entry: e, start: w[eStart], claim: w[eClaim]}, true
}

// decodeBytes decodes an entry from its byte image (entryBytes long, the lock
// word first), as the fuzzer feeds it.
func decodeBytes(b []byte) (record, bool) {
	if len(b) != entryBytes {
		return record{}, false
	}
	var w [entryWords]uint64
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return decode(&w)
}
