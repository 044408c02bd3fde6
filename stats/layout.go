package stats

// The segment layout, shared by writer and reader. Everything is counted in
// 64-bit words; offsets are word offsets from the start of the file. A
// layout change that moves or reinterprets a word bumps LayoutVersion; new
// words appended at the end of a slot (slot sizes are in the header) or new
// areas do not, as long as old readers can ignore them.

// LayoutVersion is the version of the segment layout this package writes and
// the only one it reads. The reader refuses other versions with
// ErrLayoutVersion.
//
// Version 2: socket counter CtrRxZcopy and gauge gRxHeld (zero-copy receive).
const LayoutVersion = 2

// FilePrefix is the segment file name without the pid: <dir>/goxiostat.<pid>.
const FilePrefix = "goxiostat."

// DefaultDir is where segments live unless VMA_STATS_SHMEM_DIR says otherwise.
const DefaultDir = "/tmp"

// DefaultMaxSockets is the default number of socket slots (VMA_STATS_FD_NUM).
const DefaultMaxSockets = 100

// MaxSocketsLimit is the largest number of socket slots a segment holds;
// Create clamps larger requests to it (128 MiB of slots).
const MaxSocketsLimit = 262144

// magic is "GOXIOSTA" read as a little-endian word.
const magic uint64 = 0x4154534f49584f47

// Header words.
const (
	hMagic       = iota // magic
	hVersion            // LayoutVersion
	hSize               // file size in bytes
	hPid                // process id
	hStartTime          // process start time, clock ticks after boot (/proc/PID/stat field 22)
	hCreated            // creation time, Unix nanoseconds
	hState              // stateInit, stateReady, stateClosed
	hInfoOff            // info area
	hInfoWords          //
	hSockOff            // socket slots
	hSockCount          //
	hSockWords          // words per socket slot
	hRingOff            // ring slots
	hRingCount          //
	hRingWords          //
	hPoolOff            // buffer pool slots
	hPoolCount          //
	hPoolWords          //
	hIomuxOff           // iomux slots: select, poll, then epoll fds
	hIomuxCount         //
	hIomuxWords         //
	hGlobalOff          // global block
	hGlobalWords        //
	hMcOff              // multicast group table
	hMcCount            //
	hMcWords            //
	hCmdOff             // command slots
	hCmdCount           //
	hCmdWords           //
	hZeroEpoch          // incremented by a reader after it zeroed the counters
	hCmdPosted          // incremented by a reader after it posted a command; its low 32 bits are the command futex
	hCmdDone            // incremented by the writer after it ran a command
	hMcSeq              // seqlock of the multicast group table
	hSockHigh           // one past the highest socket slot ever used (reader scan bound)
	hCapture            // the capture word (offload/capture): 0, or the generation of an attached capture segment
	headerWords  = 64
)

// Header states.
const (
	stateInit   = 0 // being created: readers wait
	stateReady  = 1 // live
	stateClosed = 2 // the process closed the writer (the file is being unlinked)
)

// Socket slot words. Words sSeq..sMetaEnd-1 and the multicast bitmap are
// metadata, changed only under the slot's seqlock; counters and gauges are
// changed with atomic adds and stores at any time.
const (
	sSeq      = 0  // seqlock sequence: odd while the writer changes metadata
	sGen      = 1  // generation: incremented each time the slot is opened
	sFD       = 2  // fd (int64)
	sFlags    = 3  // flag* bits
	sInode    = 4  // kernel inode of the socket
	sKind     = 5  // family | type<<16 | protocol<<32 | tcp state<<48 | transport<<56
	sReason   = 6  // reason | rule line<<32
	sLocalHi  = 7  // local address, 16-byte form, bytes 0-7
	sLocalLo  = 8  // bytes 8-15
	sPorts    = 9  // local port | peer port<<16
	sPeerHi   = 10 // peer address, 16-byte form
	sPeerLo   = 11 //
	sOpened   = 12 // open time, Unix nanoseconds
	sRxLimit  = 13 // receive queue limit in bytes (gauge, metadata)
	sRule     = 14 // 8 words: rule text, NUL padded
	sRuleEnd  = 22 //
	sMetaEnd  = 24 // first counter word
	sCounters = 24 // SocketCounter words start here
	sGauges   = 48 // gauge words
	sMcMap    = 56 // 8 words: bitmap of multicast table entries joined
	sMcMapEnd = 64 //
	sockWords = 64 // 512 bytes
)

// Socket flags (word sFlags).
const (
	flagInUse    = 1 << 0
	flagBlocking = 1 << 1
	flagLocal    = 1 << 2 // local address set
	flagPeer     = 1 << 3 // peer address set
	flagLocal4   = 1 << 4 // local address is IPv4
	flagPeer4    = 1 << 5 // peer address is IPv4
)

// Socket gauges (words from sGauges): levels, not counters. Zeroing resets
// the maxima to the current level and leaves the levels alone.
const (
	gRxQueuePkts     = sGauges + 0
	gRxQueuePktsMax  = sGauges + 1
	gRxQueueBytes    = sGauges + 2
	gRxQueueBytesMax = sGauges + 3
	gTxQueueBytes    = sGauges + 4
	gRxHeld          = sGauges + 5 // records the program holds (VMA's recvfrom_zcopy) now
)

// Ring slot words.
const (
	rSeq      = 0 // seqlock
	rGen      = 1 // generation
	rFlags    = 2 // flagInUse | transport<<8
	rID       = 3 // ring number, unique for the writer's lifetime
	rName     = 4 // 6 words: name, NUL padded
	rNameEnd  = 10
	rCounters = 10 // RingCounter words
	rRxQueue  = 20 // gauge: packets waiting in the receive ring
	rTxQueue  = 21 // gauge: packets waiting in the transmit ring
	rXDP      = 22 // 6 words: the RingXDP* counters
	ringWords = 32
	ringSlots = 16
)

// Buffer pool slot words.
const (
	pSeq      = 0
	pGen      = 1
	pFlags    = 2 // flagInUse
	pID       = 3
	pName     = 4 // 4 words
	pNameEnd  = 8
	pTotal    = 8  // gauge: buffers owned by the pool
	pFree     = 9  // gauge: buffers free now
	pMinFree  = 10 // gauge: lowest free count seen plus one, 0 = none yet (zeroing resets it to free+1)
	pNoBufs   = 11 // counter: allocations that failed, pool empty
	poolWords = 16
	poolSlots = 16
)

// Iomux slot words. Slot 0 is select, slot 1 is poll, the rest are epoll fds.
const (
	mSeq        = 0
	mGen        = 1
	mFlags      = 2 // flagInUse | kind<<8
	mEpfd       = 3 // epoll fd (epoll slots)
	mCounters   = 4 // IomuxCounter words
	mPollingCPU = 11
	iomuxWords  = 16
	epollSlots  = 64
	iomuxSlots  = 2 + epollSlots
)

// Global block words: GlobalCounter words, then gauges.
const (
	globalGauges       = 16
	gSocketsCurrent    = globalGauges + 0 // sockets open now
	gSocketsMax        = globalGauges + 1 // most sockets open at once
	globalWords        = 32
	globalCounterWords = globalGauges
)

// Multicast table entry words.
const (
	mcRefs     = 0 // sockets that joined this group
	mcAddrHi   = 1 // group address, 16-byte form
	mcAddrLo   = 2
	mcFlags    = 3 // flagInUse | flagLocal4 (IPv4)
	mcWords    = 4
	mcEntries  = 512
	mcMapWords = sMcMapEnd - sMcMap
)

// Command slot words.
const (
	cState   = 0 // cmdFree, cmdClaimed, cmdPosted, cmdDone
	cID      = 1 // command id, unique per segment
	cKind    = 2 // CommandKind
	cArg1    = 3
	cArg2    = 4
	cResult  = 5 // 0 applied, 1 no handler
	cClaimed = 6 // claim time, Unix nanoseconds (stale claims are reclaimed)
	cmdWords = 8
	cmdSlots = 8
)

// Command slot states.
const (
	cmdFree    = 0
	cmdClaimed = 1
	cmdPosted  = 2
	cmdDone    = 3
)

// infoMaxBytes caps the process information area.
const infoMaxBytes = 60 << 10

// geometry is the set of area offsets and sizes of one segment.
type geometry struct {
	infoOff, infoWords               int
	sockOff, sockCount, sockWords    int
	ringOff, ringCount, ringWords    int
	poolOff, poolCount, poolWords    int
	iomuxOff, iomuxCount, iomuxWords int
	globalOff, globalWords           int
	mcOff, mcCount, mcWordsPer       int
	cmdOff, cmdCount, cmdWordsPer    int
	totalWords                       int
}

// newGeometry lays out a segment with n socket slots and an info area of
// infoWords words. Areas holding slots start on a 64-byte boundary.
func newGeometry(n, infoWords int) geometry {
	g := geometry{}
	off := headerWords
	place := func(count, per int) int {
		start := (off + 7) &^ 7
		off = start + count*per
		return start
	}
	g.infoOff, g.infoWords = place(1, infoWords), infoWords
	g.sockCount, g.sockWords = n, sockWords
	g.sockOff = place(n, sockWords)
	g.ringCount, g.ringWords = ringSlots, ringWords
	g.ringOff = place(ringSlots, ringWords)
	g.poolCount, g.poolWords = poolSlots, poolWords
	g.poolOff = place(poolSlots, poolWords)
	g.iomuxCount, g.iomuxWords = iomuxSlots, iomuxWords
	g.iomuxOff = place(iomuxSlots, iomuxWords)
	g.globalWords = globalWords
	g.globalOff = place(1, globalWords)
	g.mcCount, g.mcWordsPer = mcEntries, mcWords
	g.mcOff = place(mcEntries, mcWords)
	g.cmdCount, g.cmdWordsPer = cmdSlots, cmdWords
	g.cmdOff = place(cmdSlots, cmdWords)
	g.totalWords = (off + 511) &^ 511 // whole 4 KiB pages
	return g
}

// writeHeader stores the geometry into the header words (before the state
// word makes the segment ready).
func (g geometry) writeHeader(h []uint64) {
	h[hInfoOff], h[hInfoWords] = uint64(g.infoOff), uint64(g.infoWords)
	h[hSockOff], h[hSockCount], h[hSockWords] = uint64(g.sockOff), uint64(g.sockCount), uint64(g.sockWords)
	h[hRingOff], h[hRingCount], h[hRingWords] = uint64(g.ringOff), uint64(g.ringCount), uint64(g.ringWords)
	h[hPoolOff], h[hPoolCount], h[hPoolWords] = uint64(g.poolOff), uint64(g.poolCount), uint64(g.poolWords)
	h[hIomuxOff], h[hIomuxCount], h[hIomuxWords] = uint64(g.iomuxOff), uint64(g.iomuxCount), uint64(g.iomuxWords)
	h[hGlobalOff], h[hGlobalWords] = uint64(g.globalOff), uint64(g.globalWords)
	h[hMcOff], h[hMcCount], h[hMcWords] = uint64(g.mcOff), uint64(g.mcCount), uint64(g.mcWordsPer)
	h[hCmdOff], h[hCmdCount], h[hCmdWords] = uint64(g.cmdOff), uint64(g.cmdCount), uint64(g.cmdWordsPer)
	h[hSize] = uint64(g.totalWords) * 8
}
