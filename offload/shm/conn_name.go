package shm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Segment names of stream connections.
//
// Both ends of a TCP connection compute the same name without talking to each other: the name
// hashes the effective uid, the network namespace and the two endpoints in canonical order
// (IPv4-mapped IPv6 addresses as IPv4, zones dropped, then ordered by address bytes and port),
// so it does not matter which end computes it, nor whether one end sees the other through a
// dual-stack socket. The uid and the namespace keep the same 4-tuple of another user or another
// namespace on the host (which share /dev/shm) from colliding. The name says nothing about
// which end is side 0: that is whoever creates the segment first (OpenConn).

// connNamePrefix starts every connection segment name.
const connNamePrefix = "goxio-tcp-"

// endpoint is the canonical form of one end of a connection: a 16-byte address (IPv4 as
// ::ffff:a.b.c.d) and a port.
type endpoint struct {
	addr [16]byte
	port uint16
}

func canonEndpoint(ap netip.AddrPort) endpoint {
	return endpoint{addr: ap.Addr().Unmap().WithZone("").As16(), port: ap.Port()}
}

func (e endpoint) less(o endpoint) bool {
	if c := bytes.Compare(e.addr[:], o.addr[:]); c != 0 {
		return c < 0
	}
	return e.port < o.port
}

// ConnName returns the segment name of the connection between local and remote in network
// namespace netns, for the calling user: the same at both ends. It is 42 bytes long.
func ConnName(netns uint64, local, remote netip.AddrPort) string {
	a, b := canonEndpoint(local), canonEndpoint(remote)
	if b.less(a) {
		a, b = b, a
	}
	var in [8 + 8 + 2*18]byte
	binary.LittleEndian.PutUint64(in[0:], uint64(unix.Geteuid()))
	binary.LittleEndian.PutUint64(in[8:], netns)
	copy(in[16:], a.addr[:])
	binary.LittleEndian.PutUint16(in[32:], a.port)
	copy(in[34:], b.addr[:])
	binary.LittleEndian.PutUint16(in[50:], b.port)
	sum := sha256.Sum256(in[:])
	return connNamePrefix + hex.EncodeToString(sum[:16])
}
