package capture

// The capture segment: a file /dev/shm/goxio.<uid>.cap.<pid>.<gen>, created 0600 by the tool,
// mapped by the captured process. All numbers are native-endian 64-bit words, offsets in bytes.
//
//	header (HeaderSize bytes): the words below
//	programs: the filter, trigger and stop programs, one 8-byte raw instruction each
//	socket table: SockWords counters per fd below the table's count
//	trace ring: RingSize bytes of records (record.go), a power of two
//
// The tool writes everything but the counters, the producer line and the trigger state before it
// publishes the generation; the library writes the counters, the producer line and the trigger
// state; the tool writes the consumer line. Everything the library reads is copied and checked
// before use (the segment is shared memory, hostile input).

// Magic is "GOXIOCAP" read as a little-endian word.
const Magic uint64 = 0x5041434f49584f47

// Version is the layout version; the library refuses other versions.
const Version = 1

// Header words.
const (
	HMagic      = iota // Magic
	HVersion           // Version
	HSize              // file size in bytes
	HToolPid           // the tool's pid
	HToolStart         // the tool's start time (/proc/PID/stat field 22)
	HSnapLen           // bytes of each packet copied (frame headers included)
	HFlags             // FlagPreTrigger, FlagDumpOS
	HProgOff           // offset of the programs
	HFilterLen         // instructions of the filter program (0: every packet matches)
	HTriggerLen        // instructions of the trigger program (0: no trigger)
	HStopLen           // instructions of the stop program (0: no stop condition)
	HSockOff           // offset of the socket table
	HSockCount         // fds in the socket table
	HRingOff           // offset of the trace ring
	HRingSize          // its size in bytes, a power of two
	HState             // TriggerWaiting, TriggerFired, Stopped (written by both sides)
	HPid               // the captured process's pid, written when it attached
	HSeen              // packets the taps saw
	HMatched           // packets that matched the filter
	HCaptured          // records written
	HDropped           // matching packets lost to a full ring
	HTail       = 32   // producer position (bytes written, ever); its own cache line
	HHead       = 48   // consumer position (bytes read, ever); its own cache line
	HeaderWords = 64
	HeaderSize  = HeaderWords * 8
)

// Header flags.
const (
	// FlagPreTrigger: matching packets are recorded before the trigger fired too (the tool keeps
	// the last N of them).
	FlagPreTrigger = 1 << 0
	// FlagDumpOS: the kernel path of engine sockets is tapped too.
	FlagDumpOS = 1 << 1
)

// Trigger states (HState).
const (
	TriggerNone    = 0 // no trigger: record every matching packet
	TriggerWaiting = 1 // record nothing (or only pre-trigger packets) until a packet matches the trigger
	TriggerFired   = 2 // the trigger matched
	Stopped        = 3 // the stop program matched: record nothing more
)

// Socket table counters, per fd.
const (
	SSeen = iota
	SMatched
	SCaptured
	SDropped
	SockWords
)

// Limits the library checks.
const (
	MaxProgram  = 4096       // instructions per program
	MaxSockets  = 1 << 16    // socket table entries
	MinRingSize = 1 << 16    // smallest trace ring
	MaxRingSize = 1 << 32    // largest trace ring
	MaxSnapLen  = 1<<16 + 64 // largest snap length: a whole datagram with its headers
)

// Detach is the capture word's bit with which the tool asks the process to let the segment go.
const Detach = 1 << 63

// Transports, as records name them.
const (
	ShmUDP = 1 // shared-memory UDP
	ShmTCP = 2 // shared-memory TCP
	XDP    = 3 // AF_XDP
	Kernel = 4 // the kernel path of an engine socket (--dump-os)
)

// Directions.
const (
	Out = 0 // sent by the process
	In  = 1 // received by the process
)

// TransportName names a transport for the tool's reports.
func TransportName(t uint8) string {
	switch t {
	case ShmUDP:
		return "shm-udp"
	case ShmTCP:
		return "shm-tcp"
	case XDP:
		return "xdp"
	case Kernel:
		return "kernel"
	}
	return "unknown"
}

// Layout computes the offsets of a segment with the given program lengths, socket table size and
// ring size; size is the file size.
func Layout(progs, sockets int, ringSize uint64) (progOff, sockOff, ringOff, size uint64) {
	progOff = HeaderSize
	sockOff = progOff + uint64(progs)*8
	ringOff = (sockOff + uint64(sockets)*SockWords*8 + 4095) &^ 4095
	return progOff, sockOff, ringOff, ringOff + ringSize
}
