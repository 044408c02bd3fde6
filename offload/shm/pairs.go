package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/goxio/goxio/internal/shmseg"
)

// The pairing table: how the two ends of a TCP connection between goxio processes know each
// other without a file per connection. A connecting end that found a goxio listener at its
// address registers the connection (its two endpoints) here before connect returns to the
// program, so before it can send a byte; the accepting end looks it up with memory reads only.
// A connection thus pairs late, when it has shown it lives long enough to gain from rings: the
// connecting end makes the connection segment at a later data call and marks its entry ready;
// the accepting end attaches at its next data call that finds it so. A connection that only
// exchanges a request and its answer never makes a segment, and costs what the kernel's costs.
// An accepting end that receives a byte from a peer that has no entry knows the peer is not one
// of ours (a goxio peer registers before it sends).
//
// One file per user and network namespace (goxio.<uid>.<netns>.pairs2 in the segment directory, 512 KiB):
// a header page, then PairSlots entries of 8 words, open addressing with linear probing over at
// most pairProbe slots from the endpoints' hash. Entry words:
//
//	word 0   state (bits 0-7) | generation (8-31) | owner pid (32-63)
//	word 1   owner start time (clock ticks after boot): a dead owner's entry is taken over
//	words 2-3  connecting end's address (16 bytes, IPv4 as v4-mapped: both ends name a dual-stack
//	         connection the same way)
//	words 4-5  accepting end's address
//	word 6   connecting port (bits 0-15) | accepting port (16-31)
//	word 7   not the entry's: how many registrations have this slot as their home, wherever they
//	         lie (a look-up of a key whose home counts none is over without a probe)
//
// The preload library reads and writes the table too (shim/preload/pairs.c, layout in
// pairs_layout.h, checked by TestPairsCLayout): a connection in its early phase is registered and
// looked up there without the engine.
//
// An entry is written by its owner only: claimed with a compare-and-swap of word 0 to busy, its
// key written, then published (registered) with a store of word 0; readers read word 0, the
// key, and word 0 again, and trust a key only when word 0 did not change. Removal leaves a
// tombstone (gone) that a later registration reuses; a probe stops at a never-used slot. After
// enough connections every slot is a tombstone, so a look-up of a key that is not there would
// read the whole probe window (64 cache lines, at each early data call of a connection from a
// peer without goxio); the home's count (word 7) says first whether any registration can be
// there. It is raised before an entry is claimed and lowered after its removal, so it never
// says none while a registration is visible; an owner that dies registered leaves it raised
// (a look-up of that home probes, as before).

// PairSlots is the number of entries: connections registered at once in one network
// namespace by one user's goxio processes (an entry lives from connect until pairing or close).
const PairSlots = 8192

const (
	pairsMagic       = 0x5352504f49584f47 // "GOXIOPRS" read as a little-endian word
	pairsVersion     = 2                  // 2: word 7 counts the registrations homed at the slot
	pairsHeaderWords = 512                // one 4 KiB page: magic, version, slots
	pairWords        = 8
	pairProbe        = 64

	pairFree  = 0 // never used: a probe stops here
	pairBusy  = 1 // being written by its owner
	pairReg   = 2 // registered: the connecting end is a goxio process
	pairReady = 3 // ... and it made the connection's segment
	pairGone  = 4 // removed: reusable, a probe goes on

	pairSeed = 0x9e3779b97f4a7c15 // the home hash's start
	pairMul  = 0xbf58476d1ce4e5b9 // ... and multiplier
)

// PairState is what the accepting end learns of its connection.
type PairState int

// Pairing table states as Lookup reports them.
const (
	PairNone  PairState = iota // no entry: the peer registered nothing (yet)
	PairKnown                  // the peer is a goxio process; no segment yet
	PairReady                  // the peer made the connection's segment: attach
)

// Pairs is a process's mapping of its pairing table.
type Pairs struct {
	mem   []uint64
	pid   uint64
	start uint64
}

// PairsFileName is the table's file name for a user and a network namespace. The layout
// version is part of the name: a table of another layout (another goxio version on the host)
// is another file, never misread.
func PairsFileName(uid int, netns uint64) string {
	return "goxio." + strconv.Itoa(uid) + "." + strconv.FormatUint(netns, 10) + ".pairs" + strconv.Itoa(pairsVersion)
}

// OpenPairs maps the pairing table of uid and netns in dir, creating it complete (linked into
// place once written: an opener never sees a half-made one) if there is none.
func OpenPairs(dir string, uid int, netns uint64) (*Pairs, error) {
	pid, start, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("open pairing table: %w", err)
	}
	path := shmseg.Join(dir, PairsFileName(uid, netns))
	size := (pairsHeaderWords + PairSlots*pairWords) * 8
	mem, err := shmseg.OpenTable(dir, path, size, []uint64{pairsMagic, pairsVersion, PairSlots})
	if errors.Is(err, shmseg.ErrHeader) {
		return nil, fmt.Errorf("open pairing table %s: %w", path, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("open pairing table: %w", err)
	}
	return &Pairs{mem: mem, pid: uint64(pid), start: start}, nil
}

// pairKey is a connection's entry key: both endpoints, canonical (conn_name.go).
type pairKey [5]uint64

func makePairKey(client, server netip.AddrPort) pairKey {
	c, s := canonEndpoint(client), canonEndpoint(server)
	var k pairKey
	le := binary.LittleEndian
	k[0], k[1] = le.Uint64(c.addr[:8]), le.Uint64(c.addr[8:])
	k[2], k[3] = le.Uint64(s.addr[:8]), le.Uint64(s.addr[8:])
	k[4] = uint64(c.port) | uint64(s.port)<<16
	return k
}

// home is the key's first slot.
func (k *pairKey) home() int {
	h := uint64(pairSeed)
	for _, w := range k {
		h ^= w
		h *= pairMul
		h ^= h >> 31
	}
	return int(h % PairSlots)
}

func (p *Pairs) entry(i int) []uint64 {
	off := pairsHeaderWords + i*pairWords
	return p.mem[off : off+pairWords : off+pairWords]
}

// keyIs reports whether entry e holds key k, read between two equal loads of word 0 (w).
func keyIs(e []uint64, w uint64, k *pairKey) bool {
	for j := range k {
		if atomic.LoadUint64(&e[2+j]) != k[j] {
			return false
		}
	}
	return atomic.LoadUint64(&e[0]) == w
}

func pairState(w uint64) uint64 { return w & 0xff }

// PairEntry is a connecting end's registration; the zero value is none.
type PairEntry struct {
	p *Pairs
	e []uint64
	w uint64 // word 0 as we published it (state pairReg)
}

// Register records the connection client -> server as one of a goxio process; false when the
// table has no room within the probe window (the connection then never pairs). An entry of the
// same connection left by a dead process, or by this one, is taken over.
func (p *Pairs) Register(client, server netip.AddrPort) (PairEntry, bool) {
	k := makePairKey(client, server)
	h := k.home()
	for range 4 {
		// No registration homed here: none of this connection to take over either, so the
		// first reusable slot will do.
		none := p.homeCount(h) == 0
		free, freeW := -1, uint64(0)
	probe:
		for j := range pairProbe {
			i := (h + j) % PairSlots
			e := p.entry(i)
			w := atomic.LoadUint64(&e[0])
			switch pairState(w) {
			case pairFree:
				if free < 0 {
					free, freeW = i, w
				}
				break probe // nothing is registered beyond a never-used slot
			case pairGone:
				if free < 0 {
					free, freeW = i, w
				}
				if none {
					break probe
				}
			case pairReg, pairReady:
				if keyIs(e, w, &k) && (w>>32 == p.pid || !processAlive(int(w>>32), atomic.LoadUint64(&e[1]))) {
					// The same connection's entry, left by this process or a dead one: its
					// registration is already counted at the home.
					if pe, ok := p.claim(e, w, &k, -1); ok {
						return pe, true
					}
					continue
				}
			}
		}
		if free < 0 {
			free, freeW = p.reclaim(h)
		}
		if free < 0 {
			return PairEntry{}, false
		}
		if pe, ok := p.claim(p.entry(free), freeW, &k, h); ok {
			return pe, true
		}
	}
	return PairEntry{}, false
}

// reclaim returns a slot of the probe window from h whose owner is dead and its word 0 (-1:
// none).
func (p *Pairs) reclaim(h int) (int, uint64) {
	for j := range pairProbe {
		i := (h + j) % PairSlots
		e := p.entry(i)
		w := atomic.LoadUint64(&e[0])
		if st := pairState(w); (st == pairReg || st == pairReady) && !processAlive(int(w>>32), atomic.LoadUint64(&e[1])) {
			return i, w
		}
	}
	return -1, 0
}

// claim takes entry e (word 0 was w) for key k and publishes it registered; home, unless -1,
// is k's home, whose count the new registration raises (a dead owner's registration taken over
// by reclaim stays counted at its own home: a look-up there probes).
func (p *Pairs) claim(e []uint64, w uint64, k *pairKey, home int) (PairEntry, bool) {
	if pairState(w) == pairBusy {
		return PairEntry{}, false
	}
	if home >= 0 {
		p.countHome(home, 1)
	}
	gen := (w>>8 + 1) & 0xffffff
	busy := p.pid<<32 | gen<<8 | pairBusy
	if !atomic.CompareAndSwapUint64(&e[0], w, busy) {
		if home >= 0 {
			p.countHome(home, -1)
		}
		return PairEntry{}, false
	}
	atomic.StoreUint64(&e[1], p.start)
	for j := range k {
		atomic.StoreUint64(&e[2+j], k[j])
	}
	reg := busy&^0xff | pairReg
	atomic.StoreUint64(&e[0], reg)
	return PairEntry{p: p, e: e, w: reg}, true
}

// homeCount is how many registrations have slot h as their home (word 7 of its entry).
func (p *Pairs) homeCount(h int) uint64 { return atomic.LoadUint64(&p.entry(h)[7]) }

// countHome adds d (1 or -1) to slot h's count of registrations homed there.
func (p *Pairs) countHome(h int, d int64) { atomic.AddUint64(&p.entry(h)[7], uint64(d)) }

// Registered reports whether the entry is a registration.
func (pe PairEntry) Registered() bool { return pe.p != nil }

// Ready marks the connection's segment made: the accepting end attaches at its next look.
func (pe PairEntry) Ready() bool {
	return pe.p != nil && atomic.CompareAndSwapUint64(&pe.e[0], pe.w, pe.w&^0xff|pairReady)
}

// Drop removes the registration (after pairing, or at close); the slot stays a tombstone.
func (pe PairEntry) Drop() {
	if pe.p == nil {
		return
	}
	// The key is ours until the removal: read its home before, another may claim the slot after.
	var k pairKey
	for j := range k {
		k[j] = atomic.LoadUint64(&pe.e[2+j])
	}
	gone := pe.w&^0xff | pairGone
	if atomic.CompareAndSwapUint64(&pe.e[0], pe.w, gone) ||
		atomic.CompareAndSwapUint64(&pe.e[0], pe.w&^0xff|pairReady, gone) {
		pe.p.countHome(k.home(), -1)
	}
}

// Lookup is what the accepting end (server) knows of its connection from client: memory reads
// only.
func (p *Pairs) Lookup(client, server netip.AddrPort) PairState {
	k := makePairKey(client, server)
	h := k.home()
	if p.homeCount(h) == 0 {
		return PairNone
	}
	for j := range pairProbe {
		e := p.entry((h + j) % PairSlots)
		w := atomic.LoadUint64(&e[0])
		switch pairState(w) {
		case pairFree:
			return PairNone
		case pairReg, pairReady:
			if keyIs(e, w, &k) {
				if pairState(w) == pairReady {
					return PairReady
				}
				return PairKnown
			}
		}
	}
	return PairNone
}

// Mapping returns the table's words (header included), as another writer in this process with
// the same protocol needs them (shim/preload/pairs.c), and the start time this process's
// entries carry.
func (p *Pairs) Mapping() ([]uint64, uint64) { return p.mem, p.start }

// Close unmaps the table.
func (p *Pairs) Close() error { return shmseg.Unmap(shmseg.Bytes(p.mem)) }
