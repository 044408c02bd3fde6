package conf

import (
	"strconv"
	"strings"
)

// ThreadMode is VMA_THREAD_MODE: how much locking the library needs.
type ThreadMode uint8

// Thread modes, with VMA's numbers.
const (
	ThreadSingle ThreadMode = 0 // single-threaded program: no locks
	ThreadMulti  ThreadMode = 1 // multi-threaded, spin locks (the default)
	ThreadMutex  ThreadMode = 2 // multi-threaded, mutexes
	ThreadPlenty ThreadMode = 3 // more threads than cores, spin locks
)

// ExceptionMode is VMA_EXCEPTION_HANDLING: what to do when a socket call asks
// for something the offloaded path does not support.
type ExceptionMode int8

// Exception handling modes, with VMA's numbers.
const (
	ExceptionExit        ExceptionMode = -2 // exit() when start-up fails
	ExceptionDebug       ExceptionMode = -1 // log at DEBUG, handle through the kernel (the default)
	ExceptionUnoffload   ExceptionMode = 0  // log at DEBUG and hand the socket to the kernel
	ExceptionLogError    ExceptionMode = 1  // log at ERROR and hand the socket to the kernel
	ExceptionReturnError ExceptionMode = 2  // log at ERROR and fail the call
	ExceptionAbort       ExceptionMode = 3  // log at ERROR and abort the program
)

// RingLogic is VMA_RING_ALLOCATION_LOGIC_RX/TX: how sockets are spread over rings.
type RingLogic uint8

// Ring allocation logics, with VMA's numbers.
const (
	RingPerInterface  RingLogic = 0  // one ring per interface (the default)
	RingPerIP         RingLogic = 1  // one ring per local IP address
	RingPerSocket     RingLogic = 10 // one ring per socket
	RingPerThread     RingLogic = 20 // one ring per thread that created the socket
	RingPerCore       RingLogic = 30 // one ring per CPU core
	RingPerCoreAttach RingLogic = 31 // one ring per core, threads pinned to cores
)

// MemAllocType is VMA_MEM_ALLOC_TYPE: how buffer memory is allocated.
type MemAllocType uint8

// Memory allocation types, with VMA's numbers.
const (
	MemAnon      MemAllocType = 0 // ordinary anonymous memory
	MemContig    MemAllocType = 1 // contiguous pages (the default); ordinary pages for goxio
	MemHugePages MemAllocType = 2 // huge pages, falling back to ordinary pages
)

// Params holds every parameter goxio understands, under VMA's names. Each
// field's comment names its variable; GOXIO_<NAME> is the same variable with
// the VMA_ prefix replaced, and wins over VMA_<NAME>. goxio's own switches
// (the transports VMA does not have) exist only as GOXIO_ variables. Use Load
// to read them and Defaults for VMA's defaults.
type Params struct {
	// Logging.

	TraceLevel Level  // VMA_TRACELEVEL: log verbosity
	LogFile    string // VMA_LOG_FILE: log to this file instead of stderr; "%d" is the pid (see WithPID)
	LogDetails int    // VMA_LOG_DETAILS: 0 plain, 1 +thread id, 2 +pid, 3 +time
	LogColors  bool   // VMA_LOG_COLORS: color log lines on a terminal

	// Configuration.

	ConfigFile string // VMA_CONFIG_FILE: the libvma.conf rule file; "%d" is the pid
	AppID      string // VMA_APPLICATION_ID: selects application-id sections; "" when unset; "%d" is the pid
	SpecName   string // VMA_SPEC: the profile applied under the other settings ("none", "latency", ...)

	// Statistics.

	StatsShmemDir string // VMA_STATS_SHMEM_DIR: directory of the stats segment; "" disables it; "%d" is the pid
	StatsFDNum    int    // VMA_STATS_FD_NUM: how many sockets the stats segment shows, 0-1024
	StatsFile     string // VMA_STATS_FILE: write each socket's statistics here when it closes; "%d" is the pid

	// Receive path.

	RxPoll           int  // VMA_RX_POLL: polls of an empty socket before a blocking receive sleeps; -1 forever, 0 once
	RxPollInit       int  // VMA_RX_POLL_INIT: RxPoll for a UDP socket until it joins a multicast group
	RxUDPPollOSRatio int  // VMA_RX_UDP_POLL_OS_RATIO: check the kernel socket once every N polls; 0 never
	RxPollYield      int  // VMA_RX_POLL_YIELD: yield the CPU every N polls; 0 never
	RxBytesMin       int  // VMA_RX_BYTES_MIN: smallest receive buffer, in bytes, whatever SO_RCVBUF says
	RxWRE            int  // VMA_RX_WRE: receive ring entries
	RxBufs           int  // VMA_RX_BUFS: receive buffers in the pool
	RxPollOnTxTCP    bool // VMA_RX_POLL_ON_TX_TCP: poll for incoming ACKs while sending on TCP

	// select, poll and epoll.

	SelectPoll        int  // VMA_SELECT_POLL: microseconds to poll offloaded sockets before sleeping; -1 forever
	SelectPollOSForce bool // VMA_SELECT_POLL_OS_FORCE: deprecated; sets SelectPollOSRatio and SelectSkipOS to 1
	SelectPollOSRatio int  // VMA_SELECT_POLL_OS_RATIO: poll kernel fds once every N polls; 0 never while polling
	SelectSkipOS      int  // VMA_SELECT_SKIP_OS: check kernel fds every N calls even when offloaded ones are ready

	// Transmit path.

	TxNonblockedEagains bool // VMA_TX_NONBLOCKED_EAGAINS: non-blocking UDP sends that cannot go out fail with EAGAIN instead of dropping
	TxMCLoopback        bool // VMA_TX_MC_LOOPBACK: initial IP_MULTICAST_LOOP of UDP sockets
	TxWRE               int  // VMA_TX_WRE: transmit ring entries
	TxBufs              int  // VMA_TX_BUFS: transmit buffers in the pool

	// TCP.

	TCPNodelay           bool // VMA_TCP_NODELAY: set TCP_NODELAY on every TCP socket
	TCPQuickack          bool // VMA_TCP_QUICKACK: set TCP_QUICKACK on every TCP socket
	AvoidSysCallsOnTCPFD bool // VMA_AVOID_SYS_CALLS_ON_TCP_FD: answer supported ioctl/fcntl/sockopt calls on offloaded TCP sockets without the kernel
	MTU                  int  // VMA_MTU: packet size of offloaded traffic; 0 follows the interface
	MSS                  int  // VMA_MSS: TCP maximum segment size; 0 follows MTU (MTU - 40)

	// Engine.

	OffloadedSockets       bool          // VMA_OFFLOADED_SOCKETS: new sockets are offloaded (rules permitting); false: only through the extra API
	ThreadMode             ThreadMode    // VMA_THREAD_MODE
	CloseOnDup2            bool          // VMA_CLOSE_ON_DUP2: dup2 onto an offloaded fd closes the offloaded socket first
	ExceptionHandling      ExceptionMode // VMA_EXCEPTION_HANDLING
	ProgressEngineInterval int           // VMA_PROGRESS_ENGINE_INTERVAL: milliseconds between background progress passes; 0 disables
	ProgressEngineWCEMax   int           // VMA_PROGRESS_ENGINE_WCE_MAX: most completions one background pass handles
	RingAllocationLogicRX  RingLogic     // VMA_RING_ALLOCATION_LOGIC_RX
	RingAllocationLogicTX  RingLogic     // VMA_RING_ALLOCATION_LOGIC_TX
	MemAllocType           MemAllocType  // VMA_MEM_ALLOC_TYPE
	InternalThreadAffinity string        // VMA_INTERNAL_THREAD_AFFINITY: CPUs of the background thread: -1 (any), 0x<hex mask> or a list 0,2-3 (see ParseCPUSet)

	// goxio's own transports (no VMA_ spelling: only the GOXIO_ name).

	SHM          bool   // GOXIO_SHM: shared-memory UDP between goxio processes of the host
	SHMTCP       bool   // GOXIO_SHM_TCP: shared-memory TCP too (with GOXIO_SHM)
	TCPPairAfter int    // GOXIO_SHM_TCP_PAIR_AFTER: data calls of the connecting end before a connection moves to rings
	SHMDir       string // GOXIO_SHM_DIR: directory of the shared-memory segments
	SHMSysmon    string // GOXIO_SHM_SYSMON: scheduling of the Go runtime's monitor thread: "" (the transport decides), idle or normal
	XDP          string // GOXIO_XDP: interfaces the AF_XDP transport may take (comma-separated), "all", or "" (off)
	XDPMode      string // GOXIO_XDP_MODE: how the XDP program is attached: auto, native or generic
	XDPBusyPoll  int    // GOXIO_XDP_BUSY_POLL: microseconds of kernel busy polling on AF_XDP sockets; 0 none
	XDPTxDelay   int    // GOXIO_XDP_TX_DELAY: microseconds a send may wait to share a TX kick; 0 every send kicks

	// ExtraAPI is GOXIO_EXTRA_API: VMA's extra API (SO_VMA_GET_API) offers goxio's members; off, its
	// mask is empty and every member refuses. The preload library reads it from the environment.
	ExtraAPI bool

	// src[i] names where params[i] got its value; nil or "" is the default.
	src []string
}

// Defaults returns VMA's default for every parameter.
func Defaults() Params {
	return Params{
		TraceLevel:             LevelInfo,
		LogColors:              true,
		ConfigFile:             "/etc/libvma.conf",
		SpecName:               "none",
		StatsShmemDir:          "/tmp/",
		StatsFDNum:             100,
		RxPoll:                 100000,
		RxUDPPollOSRatio:       100,
		RxBytesMin:             65536,
		RxWRE:                  16000,
		RxBufs:                 200000,
		SelectPoll:             100000,
		SelectPollOSRatio:      10,
		SelectSkipOS:           4,
		TxMCLoopback:           true,
		TxWRE:                  2048,
		TxBufs:                 200000,
		OffloadedSockets:       true,
		ThreadMode:             ThreadMulti,
		CloseOnDup2:            true,
		ExceptionHandling:      ExceptionDebug,
		ProgressEngineInterval: 10,
		ProgressEngineWCEMax:   10000,
		RingAllocationLogicRX:  RingPerInterface,
		RingAllocationLogicTX:  RingPerInterface,
		MemAllocType:           MemContig,
		InternalThreadAffinity: "-1",
		SHM:                    true,
		SHMTCP:                 true,
		TCPPairAfter:           4,
		SHMDir:                 "/dev/shm",
		XDPMode:                "auto",
		ExtraAPI:               true,
	}
}

// Setting is one parameter's value and where it came from.
type Setting struct {
	Name   string // VMA_ name of the parameter
	Value  string // value as it would be written in the environment
	Source string // "default", "spec latency", "file x.toml", "env VMA_RX_POLL", "env GOXIO_RX_POLL", "derived from VMA_TRACELEVEL", "set by program"
}

// NonDefault returns every parameter whose value differs from its default, in
// the fixed order of the parameter table, for the start-up banner.
func (p Params) NonDefault() []Setting {
	def := Defaults()
	var out []Setting
	for i := range params {
		v := params[i].format(&p)
		if v != params[i].format(&def) {
			out = append(out, Setting{Name: params[i].name, Value: v, Source: p.source(i, "set by program")})
		}
	}
	return out
}

// All returns every parameter with its value and source, in the fixed order
// of the parameter table.
func (p Params) All() []Setting {
	def := Defaults()
	out := make([]Setting, len(params))
	for i := range params {
		v := params[i].format(&p)
		fallback := "default"
		if v != params[i].format(&def) {
			fallback = "set by program"
		}
		out[i] = Setting{Name: params[i].name, Value: v, Source: p.source(i, fallback)}
	}
	return out
}

func (p *Params) source(i int, fallback string) string {
	if i < len(p.src) && p.src[i] != "" {
		return p.src[i]
	}
	return fallback
}

// WithPID returns p with the first "%d" of LogFile, StatsFile, StatsShmemDir,
// ConfigFile and AppID replaced by pid, as VMA does for these variables.
func (p Params) WithPID(pid int) Params {
	for i := range params {
		if params[i].pid {
			f := params[i].str(&p)
			*f = ExpandPID(*f, pid)
		}
	}
	return p
}

// ExpandPID replaces the first "%d" in s with pid.
func ExpandPID(s string, pid int) string {
	i := strings.Index(s, "%d")
	if i < 0 {
		return s
	}
	return s[:i] + strconv.Itoa(pid) + s[i+2:]
}
