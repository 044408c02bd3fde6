package conf

import (
	"fmt"
	"sort"
	"strings"
)

// ParamsFileEnv names the environment variable that points to the TOML
// parameters file.
const ParamsFileEnv = "GOXIO_PARAMS_FILE"

// otherEnv lists the GOXIO_ variables that are not parameters, so Load does
// not warn about them.
var otherEnv = map[string]bool{
	ParamsFileEnv: true,
	"GOXIO_LIB":   true, // tests and tools: path of libgoxio.so
	"GOXIO_BIN":   true, // tests: folder of the goxio tools
	// GOXIO_ENGINE: path of libgoxio-engine.so, read by the preload library (shim/preload/loader.c)
	// and goxio run; default: next to libgoxio.so.
	"GOXIO_ENGINE": true,
	// GOXIO_TEST_LIB_ENV: tests only, extra environment for programs run under the library.
	"GOXIO_TEST_LIB_ENV": true,
}

// renamed maps VMA's retired names to the parameter that replaced them; VMA
// still reads them, with a warning.
var renamed = map[string]string{
	"VMA_RX_POLL_OS_RATIO": "VMA_RX_UDP_POLL_OS_RATIO",
	"VMA_RX_SKIP_OS":       "VMA_RX_UDP_POLL_OS_RATIO",
}

// Load reads the parameters from environ (as os.Environ returns it; for a
// name given twice the first counts, as getenv does) and from the TOML file
// named by GOXIO_PARAMS_FILE, if any. Precedence, lowest first: defaults, the
// VMA_SPEC profile, the file, VMA_* variables, GOXIO_* variables.
//
// A value that cannot be parsed or is out of range gives a Warning and is
// ignored: the parameter keeps the value from the sources below it (the
// default when there is none). Unknown VMA_* and GOXIO_* names and an
// unreadable or malformed file give warnings too. Load never fails.
//
// As in VMA: VMA_LOG_DETAILS becomes 2 when VMA_TRACELEVEL is debug or more
// and VMA_LOG_DETAILS is not set; VMA_SELECT_POLL_OS_FORCE sets
// VMA_SELECT_POLL_OS_RATIO and VMA_SELECT_SKIP_OS to 1 unless they are set
// explicitly.
func Load(environ []string) (Params, []Warning) {
	p := Defaults()
	p.src = make([]string, len(params))
	env := firstValues(environ)

	var warns []Warning
	var layers []assignment // increasing precedence
	if path := env[ParamsFileEnv]; path != "" {
		fa, fw := readParamsFile(path)
		layers = append(layers, fa...)
		warns = append(warns, fw...)
	}
	ea, ew := envAssignments(env)
	layers = append(layers, ea...)
	warns = append(warns, ew...)

	apply := func(a assignment) {
		pr := &params[a.idx]
		if err := pr.set(&p, a.value); err != nil {
			warns = append(warns, Warning{Source: a.where, Msg: fmt.Sprintf("%s %v; keeping %s (%s)",
				pr.name, err, quoteEmpty(pr.format(&p)), p.source(a.idx, "default"))})
			return
		}
		p.src[a.idx] = a.source
	}

	// The profile comes first, whichever source names it.
	specIdx := paramIndex["VMA_SPEC"]
	for _, a := range layers {
		if a.idx == specIdx {
			apply(a)
		}
	}
	if s := findSpec(p.SpecName); s != nil {
		for _, kv := range s.set {
			i := paramIndex[kv[0]]
			if err := params[i].set(&p, kv[1]); err == nil {
				p.src[i] = "spec " + s.name
			}
		}
	}
	for _, a := range layers {
		if a.idx != specIdx {
			apply(a)
		}
	}

	if i := paramIndex["VMA_LOG_DETAILS"]; p.TraceLevel >= LevelDebug && p.src[i] == "" {
		p.LogDetails = 2
		p.src[i] = "derived from VMA_TRACELEVEL"
	}
	// With AF_XDP (a choice), shared-memory UDP (on by default) stays off unless it is set too:
	// a socket would otherwise take a ring where AF_XDP served it before (multicast members,
	// sockets AF_XDP hands to the kernel), and GOXIO_XDP keeps meaning what its users chose.
	if i := paramIndex["GOXIO_SHM"]; p.XDP != "" && p.src[i] == "" {
		p.SHM = false
		p.src[i] = "derived from GOXIO_XDP"
	}
	if p.SelectPollOSForce {
		for _, name := range []string{"VMA_SELECT_POLL_OS_RATIO", "VMA_SELECT_SKIP_OS"} {
			i := paramIndex[name]
			if p.src[i] == "" || strings.HasPrefix(p.src[i], "spec ") {
				_ = params[i].set(&p, "1")
				p.src[i] = "derived from VMA_SELECT_POLL_OS_FORCE"
			}
		}
	}
	return p, warns
}

// firstValues maps each name in environ to its first value.
func firstValues(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := m[k]; !seen {
			m[k] = v
		}
	}
	return m
}

// envAssignments turns the VMA_* and GOXIO_* variables into assignments,
// VMA_ ones first so that GOXIO_ ones win, each group in name order.
func envAssignments(env map[string]string) ([]assignment, []Warning) {
	var names []string
	for k := range env {
		if strings.HasPrefix(k, "VMA_") || strings.HasPrefix(k, "GOXIO_") {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		gi, gj := strings.HasPrefix(names[i], "GOXIO_"), strings.HasPrefix(names[j], "GOXIO_")
		if gi != gj {
			return gj
		}
		return names[i] < names[j]
	})
	var out, late []assignment
	var warns []Warning
	for _, k := range names {
		src := "env " + k
		if otherEnv[k] {
			continue
		}
		if i, ok := lookupParam(k); ok {
			out = append(out, assignment{idx: i, value: env[k], source: src, where: src, goxio: strings.HasPrefix(k, "GOXIO_")})
			continue
		}
		vmaName := "VMA_" + strings.TrimPrefix(strings.TrimPrefix(k, "VMA_"), "GOXIO_")
		if to, ok := renamed[vmaName]; ok {
			// VMA reads these after their replacement, so they override it.
			late = append(late, assignment{idx: paramIndex[to], value: env[k], source: src, where: src, goxio: strings.HasPrefix(k, "GOXIO_")})
			warns = append(warns, Warning{Source: src, Msg: fmt.Sprintf("%s is no longer used; its value is applied to %s", k, to)})
			continue
		}
		if vmaOnly[vmaName] {
			warns = append(warns, Warning{Source: src, Msg: fmt.Sprintf("%s is a VMA parameter that goxio does not use; ignored", k)})
			continue
		}
		warns = append(warns, Warning{Source: src, Msg: fmt.Sprintf("unknown parameter %s; ignored", k)})
	}
	// late ones override their replacement at the same precedence.
	out = append(out, late...)
	sort.SliceStable(out, func(i, j int) bool { return !out[i].goxio && out[j].goxio })
	return out, warns
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// vmaOnly lists VMA's parameters that have no meaning in goxio (hardware
// queues, verbs, VMA's own daemon and TCP stack internals).
var vmaOnly = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`
		VMA_VMAD_NOTIFY_DIR VMA_HANDLE_SIGINTR VMA_HANDLE_SIGSEGV VMA_CPU_USAGE_STATS
		VMA_RING_MIGRATION_RATIO_TX VMA_RING_MIGRATION_RATIO_RX VMA_RING_LIMIT_PER_INTERFACE VMA_RING_DEV_MEM_TX
		VMA_TCP_MAX_SYN_RATE VMA_TX_SEGS_TCP VMA_TX_WRE_BATCHING VMA_TX_MAX_INLINE VMA_TX_PREFETCH_BYTES
		VMA_RX_WRE_BATCHING VMA_HW_TS_CONVERSION VMA_RX_PREFETCH_BYTES VMA_RX_PREFETCH_BYTES_BEFORE_POLL
		VMA_RX_CQ_DRAIN_RATE_NSEC VMA_GRO_STREAMS_MAX VMA_TCP_3T_RULES VMA_UDP_3T_RULES VMA_ETH_MC_L2_ONLY_RULES
		VMA_MC_FORCE_FLOWTAG VMA_CQ_MODERATION_ENABLE VMA_CQ_MODERATION_COUNT VMA_CQ_MODERATION_PERIOD_USEC
		VMA_CQ_AIM_MAX_COUNT VMA_CQ_AIM_MAX_PERIOD_USEC VMA_CQ_AIM_INTERVAL_MSEC VMA_CQ_AIM_INTERRUPTS_RATE_PER_SEC
		VMA_CQ_POLL_BATCH_MAX VMA_CQ_KEEP_QP_FULL VMA_QP_COMPENSATION_LEVEL VMA_TIMER_RESOLUTION_MSEC
		VMA_TCP_TIMER_RESOLUTION_MSEC VMA_TCP_CTL_THREAD VMA_TCP_TIMESTAMP_OPTION VMA_ALLOW_PRIVILEGED_SOCK_OPT
		VMA_WAIT_AFTER_JOIN_MSEC VMA_BUFFER_BATCHING_MODE VMA_HUGETBL VMA_FORK VMA_BF VMA_TCP_CC_ALGO
		VMA_SPEC_PARAM1 VMA_SPEC_PARAM2 VMA_SOCKETXTREME VMA_INTERNAL_THREAD_CPUSET VMA_INTERNAL_THREAD_ARM_CQ
		VMA_NETLINK_TIMER VMA_NEIGH_UC_ARP_QUATA VMA_NEIGH_UC_ARP_DELAY_MSEC VMA_NEIGH_NUM_ERR_RETRIES
		VMA_TIME_MEASURE_NUM_SAMPLES VMA_TIME_MEASURE_DUMP_FILE VMA_DEFERRED_CLOSE
		VMA_TRIGGER_DUMMY_SEND_GETSOCKNAME VMA_IPOIB VMA_MAX_INLINE`) {
		vmaOnly[n] = true
	}
}
