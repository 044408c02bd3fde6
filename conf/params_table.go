package conf

import (
	"strconv"
	"strings"
)

// param describes one parameter: its VMA_ name, documentation, how to parse a
// value into Params and how to format it back.
type param struct {
	name   string // VMA_ spelling
	desc   string // one line
	values string // valid values, for documentation
	pid    bool   // a "%d" in the value is the pid (WithPID)
	set    func(p *Params, v string) error
	format func(p *Params) string
	str    func(p *Params) *string // string parameters only
}

// ParamInfo documents one parameter, for README text and `goxio params`.
type ParamInfo struct {
	Name        string // VMA_ name (GOXIO_ + the rest is the same parameter), or GOXIO_ name of goxio's own
	Default     string
	Values      string // valid values
	Description string
}

// ParamInfos documents every parameter in the fixed order of the table.
func ParamInfos() []ParamInfo {
	def := Defaults()
	out := make([]ParamInfo, len(params))
	for i, pr := range params {
		out[i] = ParamInfo{Name: pr.name, Default: pr.format(&def), Values: pr.values, Description: pr.desc}
	}
	return out
}

const maxInt32 = 1<<31 - 1

// params is the parameter table. Its order is the order of NonDefault, All
// and ParamInfos.
var params = []param{
	levelParam("VMA_TRACELEVEL", "Log verbosity: none, panic, error, warn, info, details, debug, fine, finer, all (or VMA's numbers 0-6).",
		func(p *Params) *Level { return &p.TraceLevel }),
	strParam("VMA_LOG_FILE", "Write the log to this file instead of stderr; a %d in the name is replaced by the process id.", "a path, or empty for stderr",
		true, nil, func(p *Params) *string { return &p.LogFile }),
	intParam("VMA_LOG_DETAILS", "Details on each log line: 0 none, 1 thread id, 2 process and thread id, 3 time, process and thread id (2 when VMA_TRACELEVEL is debug or more).",
		0, 3, func(p *Params) *int { return &p.LogDetails }),
	boolParam("VMA_LOG_COLORS", "Color log lines by severity when logging to a terminal.",
		func(p *Params) *bool { return &p.LogColors }),

	strParam("VMA_CONFIG_FILE", "The libvma.conf rule file that decides which sockets are offloaded; a %d is replaced by the process id.", "a path",
		true, nil, func(p *Params) *string { return &p.ConfigFile }),
	strParam("VMA_APPLICATION_ID", "Application id matched against the id of application-id sections in the rule file; unset matches only \"*\" sections.", "any word",
		true, nil, func(p *Params) *string { return &p.AppID }),
	specParam("VMA_SPEC", "Profile of tuned defaults applied below every other setting: latency, multi_ring_latency, ultra-latency, ... (see VMA_SPEC profiles).",
		func(p *Params) *string { return &p.SpecName }),

	strParam("VMA_STATS_SHMEM_DIR", "Directory where the statistics segment read by goxio_stats is created; empty disables statistics.", "a directory, or empty",
		true, nil, func(p *Params) *string { return &p.StatsShmemDir }),
	intParam("VMA_STATS_FD_NUM", "How many sockets the statistics segment shows individually.",
		0, 1024, func(p *Params) *int { return &p.StatsFDNum }),
	strParam("VMA_STATS_FILE", "Append each socket's statistics to this file when the socket closes; a %d is replaced by the process id.", "a path, or empty",
		true, nil, func(p *Params) *string { return &p.StatsFile }),

	intParam("VMA_RX_POLL", "Times a blocking receive polls an empty offloaded socket before it sleeps; -1 polls until data arrives, 0 polls once.",
		-1, 100000000, func(p *Params) *int { return &p.RxPoll }),
	intParam("VMA_RX_POLL_INIT", "VMA_RX_POLL for a UDP socket until it joins its first multicast group.",
		-1, 100000000, func(p *Params) *int { return &p.RxPollInit }),
	intParam("VMA_RX_UDP_POLL_OS_RATIO", "While polling a UDP socket, also check its kernel socket once every N polls (at most every 8 while no goxio sender has a ring to the socket); 0 never.",
		0, maxInt32, func(p *Params) *int { return &p.RxUDPPollOSRatio }),
	intParam("VMA_RX_POLL_YIELD", "While polling for receive, yield the CPU to other threads every N polls; 0 never.",
		0, maxInt32, func(p *Params) *int { return &p.RxPollYield }),
	intParam("VMA_RX_BYTES_MIN", "Smallest receive buffer of an offloaded socket in bytes, whatever SO_RCVBUF asks for; datagrams beyond the buffer are dropped.",
		0, maxInt32, func(p *Params) *int { return &p.RxBytesMin }),
	intParam("VMA_RX_WRE", "Entries of each receive ring.",
		1, 1<<24, func(p *Params) *int { return &p.RxWRE }),
	intParam("VMA_RX_BUFS", "Receive buffers in the process's buffer pool.",
		1, maxInt32, func(p *Params) *int { return &p.RxBufs }),
	boolParam("VMA_RX_POLL_ON_TX_TCP", "Poll for incoming data and ACKs while sending on a TCP socket.",
		func(p *Params) *bool { return &p.RxPollOnTxTCP }),

	intParam("VMA_SELECT_POLL", "Microseconds select, poll and epoll_wait poll offloaded sockets before sleeping (never longer than their timeout); -1 polls until an event.",
		-1, 100000000, func(p *Params) *int { return &p.SelectPoll }),
	boolParam("VMA_SELECT_POLL_OS_FORCE", "Deprecated: sets VMA_SELECT_POLL_OS_RATIO and VMA_SELECT_SKIP_OS to 1 unless they are set explicitly.",
		func(p *Params) *bool { return &p.SelectPollOSForce }),
	intParam("VMA_SELECT_POLL_OS_RATIO", "While select, poll or epoll_wait poll offloaded sockets, check the kernel fds once every N polls; 0 never.",
		0, maxInt32, func(p *Params) *int { return &p.SelectPollOSRatio }),
	intParam("VMA_SELECT_SKIP_OS", "In select, poll and epoll_wait, check the kernel fds every N calls even when offloaded sockets are ready.",
		0, maxInt32, func(p *Params) *int { return &p.SelectSkipOS }),

	boolParam("VMA_TX_NONBLOCKED_EAGAINS", "A non-blocking UDP send that cannot go out fails with EAGAIN instead of dropping the datagram silently (the kernel's behaviour).",
		func(p *Params) *bool { return &p.TxNonblockedEagains }),
	boolParam("VMA_TX_MC_LOOPBACK", "Initial IP_MULTICAST_LOOP of UDP sockets: whether multicast sent is also delivered to local receivers.",
		func(p *Params) *bool { return &p.TxMCLoopback }),
	intParam("VMA_TX_WRE", "Entries of each transmit ring.",
		1, 1<<24, func(p *Params) *int { return &p.TxWRE }),
	intParam("VMA_TX_BUFS", "Transmit buffers in the process's buffer pool.",
		1, maxInt32, func(p *Params) *int { return &p.TxBufs }),

	boolParam("VMA_TCP_NODELAY", "Set TCP_NODELAY (no Nagle delay) on every offloaded TCP socket.",
		func(p *Params) *bool { return &p.TCPNodelay }),
	boolParam("VMA_TCP_QUICKACK", "Set TCP_QUICKACK (no delayed ACKs) on every offloaded TCP socket.",
		func(p *Params) *bool { return &p.TCPQuickack }),
	boolParam("VMA_AVOID_SYS_CALLS_ON_TCP_FD", "Answer supported ioctl, fcntl, getsockopt and setsockopt calls on offloaded TCP sockets without a system call.",
		func(p *Params) *bool { return &p.AvoidSysCallsOnTCPFD }),
	intParam("VMA_MTU", "Packet size of offloaded traffic in bytes; 0 follows each interface's MTU.",
		0, 65535, func(p *Params) *int { return &p.MTU }),
	intParam("VMA_MSS", "TCP maximum segment size of offloaded connections; 0 follows VMA_MTU (MTU - 40).",
		0, 65535, func(p *Params) *int { return &p.MSS }),

	boolParam("VMA_OFFLOADED_SOCKETS", "New sockets are offloaded (as the rules allow); 0 leaves every socket to the kernel.",
		func(p *Params) *bool { return &p.OffloadedSockets }),
	enumParam("VMA_THREAD_MODE", "Locking: 0 single-threaded program (no locks), 1 multi-threaded with spin locks, 2 with mutexes, 3 more threads than cores.",
		func(p *Params) *ThreadMode { return &p.ThreadMode }, 0, 1, 2, 3),
	boolParam("VMA_CLOSE_ON_DUP2", "dup2 or dup3 onto an offloaded socket's fd closes that socket first, as the kernel does.",
		func(p *Params) *bool { return &p.CloseOnDup2 }),
	enumParam("VMA_EXCEPTION_HANDLING", "When an offloaded socket meets an unsupported call: -2 exit if start-up fails, -1 log at debug, 0 log at debug and hand the socket to the kernel, 1 log an error and hand it to the kernel, 2 log an error and fail the call, 3 log an error and abort.",
		func(p *Params) *ExceptionMode { return &p.ExceptionHandling }, -2, -1, 0, 1, 2, 3),
	intParam("VMA_PROGRESS_ENGINE_INTERVAL", "Milliseconds between background passes that move offloaded traffic (TCP timers, ACKs) when the program does not call in; 0 disables them.",
		0, maxInt32, func(p *Params) *int { return &p.ProgressEngineInterval }),
	intParam("VMA_PROGRESS_ENGINE_WCE_MAX", "Most packets one background pass processes.",
		0, maxInt32, func(p *Params) *int { return &p.ProgressEngineWCEMax }),
	enumParam("VMA_RING_ALLOCATION_LOGIC_RX", "How receive traffic is spread over rings: 0 per interface, 1 per IP address, 10 per socket, 20 per thread, 30 per core, 31 per core with threads pinned.",
		func(p *Params) *RingLogic { return &p.RingAllocationLogicRX }, 0, 1, 10, 20, 30, 31),
	enumParam("VMA_RING_ALLOCATION_LOGIC_TX", "How transmit traffic is spread over rings, with the values of VMA_RING_ALLOCATION_LOGIC_RX.",
		func(p *Params) *RingLogic { return &p.RingAllocationLogicTX }, 0, 1, 10, 20, 30, 31),
	enumParam("VMA_MEM_ALLOC_TYPE", "Buffer memory: 0 anonymous memory, 1 contiguous (ordinary) pages, 2 huge pages when available.",
		func(p *Params) *MemAllocType { return &p.MemAllocType }, 0, 1, 2),
	strParam("VMA_INTERNAL_THREAD_AFFINITY", "CPUs the background thread may run on: -1 any, a hex mask 0x3, or a list such as 0,2-3.", "-1, 0x<hex mask> or a CPU list",
		false, checkCPUSet, func(p *Params) *string { return &p.InternalThreadAffinity }),

	// goxio's own switches: GOXIO_ names only.
	boolParam("GOXIO_SHM", "Offload UDP between goxio processes of the host through shared-memory rings (on by default; 0 turns it off).",
		func(p *Params) *bool { return &p.SHM }),
	boolParam("GOXIO_SHM_TCP", "With GOXIO_SHM, also offload TCP connections between goxio processes of the host through shared memory (on by default; 0 turns it off).",
		func(p *Params) *bool { return &p.SHMTCP }),
	intParam("GOXIO_SHM_TCP_PAIR_AFTER", "Data calls the connecting end of a TCP connection between goxio processes makes through the kernel before the connection moves to shared memory (a connection that only carries a request and its answer never pays for the move); 1 moves it at the first.",
		1, maxInt32, func(p *Params) *int { return &p.TCPPairAfter }),
	strParam("GOXIO_SHM_DIR", "Directory of the shared-memory transports' segments (a tmpfs).", "a directory",
		false, checkDir, func(p *Params) *string { return &p.SHMDir }),
	strParam("GOXIO_SHM_SYSMON", "Scheduling of the Go runtime's monitor thread while the shared-memory transport runs: idle (SCHED_IDLE, its wake-ups then never delay a polling thread) or normal; empty lets the transport decide (idle).", "idle, normal or empty",
		false, checkOneOf("", "idle", "normal"), func(p *Params) *string { return &p.SHMSysmon }),
	strParam("GOXIO_XDP", "Interfaces the AF_XDP UDP transport may take over (an XDP program is attached to each): comma-separated names, all (every Ethernet interface that is up with an IPv4 or IPv6 address), or empty for off.", "if1,if2, all or empty",
		false, checkInterfaces, func(p *Params) *string { return &p.XDP }),
	strParam("GOXIO_XDP_MODE", "How the XDP program is attached: native, generic, or auto (native, then generic when the driver refuses).", "auto, native or generic",
		false, checkOneOf("auto", "native", "generic"), func(p *Params) *string { return &p.XDPMode }),
	intParam("GOXIO_XDP_BUSY_POLL", "Microseconds of kernel busy polling asked for on AF_XDP sockets (SO_PREFER_BUSY_POLL, SO_BUSY_POLL); 0 none.",
		0, 1000000, func(p *Params) *int { return &p.XDPBusyPoll }),
	intParam("GOXIO_XDP_TX_DELAY", "Microseconds a datagram of a stream of AF_XDP sends may wait for a TX kick shared with the next ones; 0 every send kicks at once (a waiting datagram is lost if the program then calls _exit or is killed).",
		0, 1000000, func(p *Params) *int { return &p.XDPTxDelay }),
	boolParam("GOXIO_EXTRA_API", "VMA's extra API (getsockopt SO_VMA_GET_API, goxio_extra.h) offers the members goxio provides; 0 leaves its mask empty and every member refusing with EOPNOTSUPP, so programs take their fallback paths. Read from the environment only.",
		func(p *Params) *bool { return &p.ExtraAPI }),
}

// paramIndex maps a VMA_ name to its index in params.
var paramIndex = func() map[string]int {
	m := make(map[string]int, len(params))
	for i, p := range params {
		m[p.name] = i
	}
	return m
}()

// lookupParam finds a parameter by its VMA_ or GOXIO_ name (goxio's own have only the latter).
func lookupParam(name string) (int, bool) {
	if rest, ok := strings.CutPrefix(name, "GOXIO_"); ok {
		if i, ok := paramIndex[name]; ok {
			return i, true
		}
		name = "VMA_" + rest
	}
	i, ok := paramIndex[name]
	return i, ok
}

func intParam(name, desc string, min, max int, field func(*Params) *int) param {
	return param{
		name: name, desc: desc,
		values: strconv.Itoa(min) + ".." + strconv.Itoa(max),
		set: func(p *Params, v string) error {
			n, err := parseInt(v, min, max)
			if err != nil {
				return err
			}
			*field(p) = n
			return nil
		},
		format: func(p *Params) string { return strconv.Itoa(*field(p)) },
	}
}

func boolParam(name, desc string, field func(*Params) *bool) param {
	return param{
		name: name, desc: desc, values: "0 or 1",
		set: func(p *Params, v string) error {
			b, err := parseBool(v)
			if err != nil {
				return err
			}
			*field(p) = b
			return nil
		},
		format: func(p *Params) string {
			if *field(p) {
				return "1"
			}
			return "0"
		},
	}
}

func strParam(name, desc, values string, pid bool, check func(string) error, field func(*Params) *string) param {
	return param{
		name: name, desc: desc, values: values, pid: pid, str: field,
		set: func(p *Params, v string) error {
			if check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*field(p) = v
			return nil
		},
		format: func(p *Params) string { return *field(p) },
	}
}

func enumParam[T ~int8 | ~uint8](name, desc string, field func(*Params) *T, allowed ...int) param {
	vals := make([]string, len(allowed))
	for i, a := range allowed {
		vals[i] = strconv.Itoa(a)
	}
	return param{
		name: name, desc: desc, values: strings.Join(vals, ", "),
		set: func(p *Params, v string) error {
			n, err := parseInt(v, allowed[0], allowed[len(allowed)-1])
			if err != nil {
				return err
			}
			for _, a := range allowed {
				if n == a {
					*field(p) = T(n)
					return nil
				}
			}
			return &valueError{v, "want one of " + strings.Join(vals, ", ")}
		},
		format: func(p *Params) string { return strconv.Itoa(int(*field(p))) },
	}
}

func levelParam(name, desc string, field func(*Params) *Level) param {
	return param{
		name: name, desc: desc, values: "none, panic, error, warn, info, details, debug, fine, finer, all, 0-6",
		set: func(p *Params, v string) error {
			l, err := ParseLevel(v)
			if err != nil {
				return &valueError{v, "want none, panic, error, warn, info, details, debug, fine, finer, all or 0-6"}
			}
			*field(p) = l
			return nil
		},
		format: func(p *Params) string { return field(p).String() },
	}
}

func specParam(name, desc string, field func(*Params) *string) param {
	return param{
		name: name, desc: desc, values: strings.Join(SpecNames(), ", "),
		set: func(p *Params, v string) error {
			s, err := ParseSpec(v)
			if err != nil {
				return &valueError{v, "want one of " + strings.Join(SpecNames(), ", ")}
			}
			*field(p) = s
			return nil
		},
		format: func(p *Params) string { return *field(p) },
	}
}
