package shm

import "math/bits"

// Connection segment layout (stream connections, issue 5). One header page, then the data area
// of direction 0 (side 0 writes, side 1 reads), then the data area of direction 1 (side 1
// writes, side 0 reads). Native-endian words, each naturally aligned and accessed only through
// sync/atomic once the segment is published (mem_unsafe.go states why that is valid).
//
//	page 0: identity line (magic, version, capacities, generation, netns, token, endpoints)
//	        side 0 line, side 1 line (owner tag, start time, state flags)
//	        per direction: producer line (tail, K), consumer line (head), wake line
//	4096:             direction 0 data, cap0 bytes
//	4096+cap0:        direction 1 data, cap1 bytes
//
// Who writes what: the identity line is written by the creator before the segment gets its
// name and never changes; a side line only by its side; a producer line only by the writer of
// that direction, a consumer line only by its reader. The wake line is shared: spinners and
// sleepers by the reader, wakePending set by the writer and cleared by the reader, spaceWait set
// by the writer and cleared by the reader (stream_wake.go), the back request set by the reader
// (stream_back.go).
const (
	connMagic   = 0x4e4e4f4348535847 // "GXSHCONN" little-endian
	connVersion = 3                  // 2: the wake line's sleepers word; 3: back-request word in the wake line

	// MinStreamBytes and MaxStreamBytes bound the capacity of one direction of a connection;
	// OpenConn rounds the caller's sizes up to a power of two within them.
	MinStreamBytes = 4096
	MaxStreamBytes = 4 << 20

	cnMagic   = 0  // u64 connMagic, valid from the moment the segment has its final name
	cnVersion = 8  // u64 connVersion
	cnCap0    = 16 // u64 capacity of direction 0 (side 0 -> side 1)
	cnCap1    = 24 // u64 capacity of direction 1 (side 1 -> side 0)
	cnGen     = 32 // u64 generation both ends agreed on (ConnConfig.Gen)
	cnNetNS   = 40 // u64 network namespace of the connection
	cnToken   = 48 // u64 random secret chosen by the creator (never 0)
	cnEndA    = 64 // creator's local endpoint: u64 addr[0:8], u64 addr[8:16], u64 port
	cnEndB    = 88 // creator's remote endpoint, same encoding

	cnSide0 = 128 // side lines, 64 bytes each
	cnSide1 = 192

	sdTag   = 0  // u64 pid<<32 | ready bit (0: nobody)
	sdStart = 8  // u64 start time of the process, written before the ready bit
	sdFlags = 16 // u64 StreamState bits, only ever set (atomic OR) by the side itself

	cnDir0 = 256 // direction blocks, 384 bytes each (three 128-byte lines)
	cnDir1 = 640

	drTail       = 0   // u64 bytes the writer published (producer line)
	drKernel     = 8   // u64 K+1 once the writer switched (0: not yet), K = bytes sent through the kernel
	drHead       = 128 // u64 bytes the reader consumed (consumer line)
	drSpinners   = 256 // i32 reader threads polling this direction (wake line)
	drWakePend   = 260 // u32 1 while a data wake-up is on its way to the reader
	drSpaceWait  = 264 // u64 free bytes the sleeping writer waits for (0: the writer is not waiting)
	drSleepers   = 272 // i32 reader threads asleep in the kernel on this direction (wake line)
	connDataOff  = pageSize
	sideLineSize = 64
)

// streamCapacity rounds n up to a power of two within [MinStreamBytes, MaxStreamBytes].
func streamCapacity(n int) uint64 {
	if n <= MinStreamBytes {
		return MinStreamBytes
	}
	if n >= MaxStreamBytes {
		return MaxStreamBytes
	}
	return 1 << bits.Len64(uint64(n-1))
}

// validStreamCap reports whether c is a capacity a creator could have chosen.
func validStreamCap(c uint64) bool {
	return c >= MinStreamBytes && c <= MaxStreamBytes && c&(c-1) == 0
}

// connSize is the file size of a connection segment with these capacities.
func connSize(cap0, cap1 uint64) int { return connDataOff + int(cap0) + int(cap1) }

// sideOff and dirOff locate a side line and a direction block; side s writes direction s.
func sideOff(side int) int { return cnSide0 + side*sideLineSize }
func dirOff(dir int) int   { return cnDir0 + dir*(cnDir1-cnDir0) }
