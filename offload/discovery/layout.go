package discovery

// Segment layout, version 1. The file is a header page followed by a fixed
// table of entries; everything is little-endian 64-bit words, accessed with
// atomic loads and stores only.
//
// Header (one page; each hot word on its own cache line):
//
//	word 0   magic "GOXIODIR"
//	word 1   version (low 32 bits) | words per entry (high 32 bits)
//	word 2   number of entries
//	word 3   header words (offset of entry 0, in words)
//	word 8   generation: bumped after every change of any entry
//	word 16  claim counter: a unique, increasing number for every Publish
//	         (orders bindings like the kernel's hash chains and tells a
//	         handle's entry from a later one in the same slot)
//	word 24  high-water mark: at least one past the highest slot taken, so
//	         scans stop early (lowered when the top slots are freed: high.go)
//
// Entry (entryWords words, four cache lines):
//
//	word 0      lock: holder pid (high 32 bits) | sequence (low 32 bits);
//	            odd sequence = being written by holder (seqlock)
//	word 1      owner pid (low 32 bits, 0 = free slot) | flags (high 32 bits)
//	word 2      owner start time (clock ticks after boot, /proc/PID/stat field 22)
//	word 3      claim number (from the header's claim counter)
//	word 4      family (bits 0-7) | inbox length (8-15) | local port (16-31) |
//	            peer port (32-47) | address kinds (48-55, two bits per address:
//	            local, peer, group, source; 0 absent, 1 IPv4, 2 IPv6)
//	words 5-6   local address (16 bytes, IPv4 in the first 4)
//	words 7-8   peer address
//	words 9-10  group address
//	words 11-12 source address
//	words 13-20 inbox name (64 bytes, at most maxInbox used)
//	words 21-31 reserved, zero
const (
	magic   = 0x5249444f49584f47 // "GOXIODIR" read as a little-endian word
	version = 1

	headerWords = 512 // one 4 KiB page
	entryWords  = 32
	entryBytes  = entryWords * 8

	// Entries is the number of entries of the table: every offloaded UDP
	// binding and every multicast membership of every goxio process of one
	// user in one network namespace.
	Entries = 4096

	hMagic       = 0
	hVersion     = 1
	hEntries     = 2
	hHeaderWords = 3
	hGen         = 8
	hClaim       = 16
	hHigh        = 24

	eLock   = 0
	eOwner  = 1
	eStart  = 2
	eClaim  = 3
	eMeta   = 4
	eLocal  = 5
	ePeer   = 7
	eGroup  = 9
	eSource = 11
	eInbox  = 13
	eEnd    = 21 // first reserved word

	maxInbox = 63
)

// Entry flags (high 32 bits of eOwner).
const (
	fV6Only = 1 << iota
	fReuseAddr
	fReusePort
	fNoMulticastAll
	fMulticastSender
	fStream   // a listening TCP socket (Entry.Stream)
	fLazy     // ... published by the preload library before its process loaded the engine (Entry.Lazy)
	fAllFlags = fV6Only | fReuseAddr | fReusePort | fNoMulticastAll | fMulticastSender | fStream | fLazy
)

// Address kinds in the meta word.
const (
	kindNone = 0
	kind4    = 1
	kind6    = 2
)

// segmentWords is the size of a segment of n entries, in words.
func segmentWords(n int) int { return headerWords + n*entryWords }
