package discovery

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Lookup follows the kernel's choice of receiving UDP sockets
// (__udp4_lib_lookup, __udp6_lib_lookup and the multicast delivery paths):
//
// Unicast: two passes, first over sockets bound to exactly the destination
// address, then, only if none matched, over sockets bound to the wildcard.
// Within a pass a socket scores (IPv4 destination) 2 for an AF_INET socket
// and 1 for an AF_INET6 one, +4 when connected to the source address, +4
// when connected to the source port; (IPv6 destination) 0, +1 for each of
// peer address and port. A socket connected elsewhere never matches; an
// AF_INET6 socket matches an IPv4 destination only without V6Only, bound to
// :: or to ::ffff:a.b.c.d. The highest score wins; unconnected members of a
// SO_REUSEPORT group tied at the top share the flows by a hash of source and
// destination (stable while the group does not change); other ties go to
// the most recently published socket, like the kernel's hash chains.
//
// Differences from the kernel: interfaces (SO_BINDTODEVICE, the interface a
// multicast group was joined on) are not modelled, and the kernel's early
// return on the first SO_REUSEPORT match of a chain is replaced by the best
// score over all sockets.

// flowHash hashes a flow (FNV-1a over both addresses and ports) for the
// choice within a SO_REUSEPORT group; the same in every process.
func flowHash(dst, src netip.AddrPort) uint32 {
	var b [36]byte
	d, s := dst.Addr().As16(), src.Addr().As16()
	copy(b[0:16], d[:])
	copy(b[16:32], s[:])
	binary.BigEndian.PutUint16(b[32:], dst.Port())
	binary.BigEndian.PutUint16(b[34:], src.Port())
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	// FNV leaves the last bytes in few bits: finish with a 64-bit mixer
	// (the choice below uses the high bits).
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return uint32(h)
}

// localMatch tells how e's bound address matches the destination daddr
// (unmapped): exact, wildcard, or not at all.
func localMatch(e *Entry, daddr netip.Addr) (exact, wildcard bool) {
	la := e.Local.Addr()
	if daddr.Is4() {
		switch e.Family {
		case unix.AF_INET:
		case unix.AF_INET6:
			if e.V6Only {
				return false, false
			}
			if la.IsValid() && !la.IsUnspecified() && !la.Is4In6() {
				return false, false // a real IPv6 address never receives IPv4
			}
			la = la.Unmap()
		default:
			return false, false
		}
	} else if e.Family != unix.AF_INET6 || la.Is4In6() {
		return false, false
	}
	if !la.IsValid() || la.IsUnspecified() {
		return false, true
	}
	return la == daddr, false
}

// peerScore checks e's connected peer against the source and returns the
// score it adds, or -1 when e is connected elsewhere.
func peerScore(e *Entry, saddr netip.Addr, sport uint16, v4 bool) int {
	score := 0
	addrPts, portPts := 1, 1
	if v4 {
		addrPts, portPts = 4, 4
	}
	if pa := e.Peer.Addr(); pa.IsValid() && !pa.IsUnspecified() {
		if v4 && e.Family == unix.AF_INET6 && !pa.Is4In6() {
			return -1
		}
		if pa.Unmap() != saddr {
			return -1
		}
		score += addrPts
	}
	if p := e.Peer.Port(); p != 0 {
		if p != sport {
			return -1
		}
		score += portPts
	}
	return score
}

// connected reports whether e is a connected socket.
func connected(e *Entry) bool {
	return e.Peer.Port() != 0 || e.Peer.Addr().IsValid() && !e.Peer.Addr().IsUnspecified()
}

// candidate is a matching entry and where it lives.
type candidate struct {
	r     record
	slot  int
	lock  uint64 // lock word of the copy
	score int
}

// Lookup returns the goxio sockets the kernel would deliver a datagram from
// src to dst to, appended to buf[:0] (PID filled in): at most one for a
// unicast destination, one entry per receiving socket for a multicast or
// the limited broadcast destination (every membership entry for the group on
// dst's port, bound to the wildcard or to the group, honouring Source and
// the IP_MULTICAST_ALL default; the entry returned for a socket is its
// membership of the group if it has one, else its plain binding).
// IPv4-mapped IPv6 addresses in dst and src stand for IPv4 (an AF_INET6
// receiver sees the source as ::ffff:a.b.c.d).
// Entries of dead processes are skipped and swept; entries being written
// right now are skipped (retry on the next Gen).
func (d *Dir) Lookup(dst, src netip.AddrPort, buf []Entry) []Entry {
	out := buf[:0]
	if d == nil || d.closed.Load() {
		return out
	}
	daddr := dst.Addr().WithZone("").Unmap()
	saddr := src.Addr().WithZone("").Unmap()
	if !daddr.IsValid() || dst.Port() == 0 {
		return out
	}
	dst = netip.AddrPortFrom(daddr, dst.Port())
	src = netip.AddrPortFrom(saddr, src.Port())
	if daddr.IsMulticast() || daddr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return d.lookupMulticast(dst, src, out)
	}
	return d.lookupUnicast(dst, src, out)
}

// filter selects entries by their raw words: bound to port, or (group set)
// a membership of the group whose kind and words are given; UDP entries, or
// (stream set) listening TCP sockets.
type filter struct {
	port   uint16
	group  bool
	gkind  uint64
	g0, g1 uint64
	stream bool
}

// want reports whether an entry with these owner, meta and group words passes.
func (f *filter) want(owner, meta, g0, g1 uint64) bool {
	if (owner>>32&fStream != 0) != f.stream {
		return false
	}
	return metaPort(meta) == f.port || f.group && meta>>52&3 == f.gkind && g0 == f.g0 && g1 == f.g1
}

// scan calls f for a consistent copy of every occupied entry that flt
// accepts; f returns false to stop.
func (d *Dir) scan(flt filter, f func(slot int, w *[entryWords]uint64) bool) {
	var w [entryWords]uint64
	budget := scanBudget
	for i, hi := 0, d.high(); i < hi; i++ {
		s := d.slot(i)
		// Cheap filters first (racy, checked again on the consistent copy).
		owner := atomic.LoadUint64(&s[eOwner])
		if uint32(owner) == 0 ||
			!flt.want(owner, atomic.LoadUint64(&s[eMeta]), atomic.LoadUint64(&s[eGroup]), atomic.LoadUint64(&s[eGroup+1])) {
			continue
		}
		if readEntry(s, &w, &budget) != readOK || !flt.want(w[eOwner], w[eMeta], w[eGroup], w[eGroup+1]) {
			continue
		}
		if !f(i, &w) {
			return
		}
	}
}

func (d *Dir) lookupUnicast(dst, src netip.AddrPort, out []Entry) []Entry {
	daddr, saddr := dst.Addr(), src.Addr()
	v4 := daddr.Is4()
	var buf [8]candidate
	exact, wild := buf[:0:4], buf[4:4:8]
	c := liveCache{d: d, recent: true}
	d.scan(filter{port: dst.Port()}, func(slot int, w *[entryWords]uint64) bool {
		r, ok := decode(w)
		if !ok {
			return true
		}
		isExact, isWild := localMatch(&r.Entry, daddr)
		if !isExact && !isWild {
			return true
		}
		score := peerScore(&r.Entry, saddr, src.Port(), v4)
		if score < 0 {
			return true
		}
		if v4 && r.Family == unix.AF_INET {
			score += 2
		} else if v4 {
			score++
		}
		if !c.alive(r.PID, r.start) {
			d.removeDead(slot, w)
			return true
		}
		cand := candidate{r: r, slot: slot, lock: w[eLock], score: score}
		if isExact {
			exact = keepBest(exact, cand)
		} else {
			wild = keepBest(wild, cand)
		}
		return true
	})
	top := exact
	if len(top) == 0 {
		top = wild
	}
	if len(top) == 0 {
		return out
	}
	return append(out, choose(top, dst, src).Entry)
}

// keepBest keeps the candidates with the highest score.
func keepBest(top []candidate, c candidate) []candidate {
	switch {
	case len(top) == 0 || c.score == top[0].score:
		return append(top, c)
	case c.score > top[0].score:
		return append(top[:0], c)
	}
	return top
}

// choose picks one of the candidates tied at the top score: the most
// recently published, or, when that one is an unconnected SO_REUSEPORT
// socket, the member of its group the flow hashes to (group = unconnected
// SO_REUSEPORT sockets of the same family and bound address, in publish
// order).
func choose(top []candidate, dst, src netip.AddrPort) record {
	last := 0
	for i := range top {
		if top[i].r.claim > top[last].r.claim {
			last = i
		}
	}
	lr := &top[last].r
	if !lr.ReusePort || connected(&lr.Entry) {
		return *lr
	}
	var members [16]int
	group := members[:0]
	for i := range top {
		r := &top[i].r
		if r.ReusePort && !connected(&r.Entry) && r.Family == lr.Family && r.Local == lr.Local {
			group = append(group, i)
		}
	}
	// Publish order (insertion sort: groups are small).
	for i := 1; i < len(group); i++ {
		for j := i; j > 0 && top[group[j]].r.claim < top[group[j-1]].r.claim; j-- {
			group[j], group[j-1] = group[j-1], group[j]
		}
	}
	k := uint64(flowHash(dst, src)) * uint64(len(group)) >> 32
	return top[group[k]].r
}
