package shm

// Segment layouts. All multi-byte fields are native-endian (both ends run on the same host);
// every field another process writes concurrently is a naturally aligned 32- or 64-bit word
// accessed only through sync/atomic (see mem_unsafe.go for the alignment argument).

const (
	pageSize = 4096

	// MaxPayload is the largest datagram payload Send accepts (the UDP limit).
	MaxPayload = 65535
	// MaxName is the largest name a record carries: a source sockaddr (sizeof(struct
	// sockaddr_in6) at most), or for a multicast datagram to an IPv6 member its source and group
	// (offload/transport/shm/multicast.go).
	MaxName = 40
	// MinRingBytes and MaxRingBytes bound a ring's data capacity; DialInbox rounds its
	// ringBytes up to a power of two within them.
	MinRingBytes = 4096
	MaxRingBytes = 1 << 30
	// MaxSlots bounds the slot table of an inbox (senders at once).
	MaxSlots = 4096

	// layoutVersion 5: kindAfterKernel records (a reader of version 4 takes them for corruption).
	layoutVersion = 5
)

// Inbox segment: one header page, then slots of slotSize bytes.
const (
	inboxMagic = 0x58424e4948535847 // "GXSHINBX" little-endian

	ibMagic    = 0   // u64 inboxMagic, stored last at creation
	ibVersion  = 8   // u64 layoutVersion
	ibSlots    = 16  // u64 number of slots
	ibPID      = 24  // u64 owner pid
	ibStart    = 32  // u64 owner start time (clock ticks after boot)
	ibClosed   = 40  // u64 1 once the owner closed the inbox
	ibSpinners = 128 // i32 receiver threads polling (own cache line with wakePending)
	ibWake     = 132 // u32 wakePending: 1 while a wake datagram is on its way
	ibGen      = 256 // u64 bumped after every slot change (own cache line)

	slotTableOff = pageSize
	slotSize     = 64

	slTag   = 0  // u64 tag: pid<<32 | seq<<1 | ready (pid 0 = free)
	slStart = 8  // u64 sender start time, written by the claimer before ready
	slID    = 16 // u64 ring number n of <name>.<pid>.<n>, written before ready
)

// inboxSize is the file size of an inbox with n slots (whole pages).
func inboxSize(n int) int {
	return (slotTableOff + n*slotSize + pageSize - 1) &^ (pageSize - 1)
}

// Slot tags. A claim sets the pid and a new sequence number (so a stale CAS of a previous
// owner's tag fails, ABA-free), the ready bit follows once start time and ring number are written.
const (
	tagReady  = 1
	tagSeqMax = 1<<31 - 1
)

func tagPID(t uint64) int      { return int(t >> 32) }
func tagSeq(t uint64) uint64   { return (t >> 1) & tagSeqMax }
func tagIsReady(t uint64) bool { return t&tagReady != 0 }
func claimTag(pid int, old uint64) uint64 {
	return uint64(uint32(pid))<<32 | ((tagSeq(old)+1)&tagSeqMax)<<1
}
func freeTag(old uint64) uint64 { return tagSeq(old) << 1 }

// Ring segment: one header page (identity line, producer line, consumer line), then the data area.
const (
	ringMagic = 0x474e495248535847 // "GXSHRING" little-endian

	rgMagic    = 0  // u64 ringMagic, stored last at creation
	rgVersion  = 8  // u64 layoutVersion
	rgCapacity = 16 // u64 data capacity, a power of two
	rgPID      = 24 // u64 sender pid
	rgStart    = 32 // u64 sender start time
	rgID       = 40 // u64 ring number n

	rgTail   = 128 // u64 producer position (producer line)
	rgPushed = 136 // u64 records published
	rgDrops  = 144 // u64 datagrams refused with ErrFull
	rgWakes  = 152 // u64 wake-ups requested
	rgClosed = 160 // u64 1 once the sender closed its Outlet

	// rgBusy and rgDetached have cache lines of their own: the sender writes busy twice per Send
	// and reads detached on every Send, while the receiver reads the producer line (tail) and
	// writes the consumer line (head) all the time; sharing either line cost the sender a cache
	// miss per access under load.
	rgBusy = 192 // u64 1 while a Send is between its check of the inbox's closed word and its publish

	rgHead     = 256 // u64 consumer position (consumer line)
	rgDetached = 320 // u64 1 once the receiver detached the ring (the sender gets ErrClosed)

	ringDataOff = pageSize
)

// Records. A record starts on a cache line (recAlign) and begins with one 64-bit word, stored
// last and atomically by the producer: it publishes the record. The consumer polls that word
// (the line it then reads the payload from) instead of the producer's tail, so a datagram costs
// the receiver no miss on the tail's line. The word carries the record's position (seq), so a
// word left from an earlier lap of the ring, or the zeroed area, never reads as published.
//
//	bits  0-23: length: payload bytes (data), or the record's length in recAlign units (pad)
//	bits 24-29: namelen
//	bits 30-31: kind
//	bits 32-63: seq: uint32(position / recAlign)
//
// A kindAfterKernel record is a data record that the sending socket sent through the kernel to
// the same receiver before it (Outlet.SendAfterKernel): the receiver takes what its kernel socket
// holds first (Inbox.TakeAfterKernel).
const (
	recHdr          = 48 // header bytes before the payload: the record word and MaxName name bytes
	recNameOff      = 8  // name bytes start
	recAlign        = 64 // a record's start and size are multiples of it
	kindData        = 1
	kindPad         = 2
	kindAfterKernel = 3
)

// recSize is the ring space taken by a record with n payload bytes.
func recSize(n int) uint64 { return uint64(recHdr+n+recAlign-1) &^ (recAlign - 1) }

// recWord packs the first 8 bytes of the record at position pos.
func recWord(length int, namelen int, kind byte, pos uint64) uint64 {
	return uint64(uint32(length)&(1<<24-1)) | uint64(namelen&63)<<24 | uint64(kind&3)<<30 | recSeq(pos)<<32
}

// recSeq is the seq field of the record at position pos.
func recSeq(pos uint64) uint64 { return uint64(uint32(pos / recAlign)) }

// recFields unpacks a record word.
func recFields(w uint64) (length, namelen uint64, kind byte, seq uint64) {
	return w & (1<<24 - 1), (w >> 24) & 63, byte(w>>30) & 3, w >> 32
}
