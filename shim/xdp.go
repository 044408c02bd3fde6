package main

import (
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload"
	xdptr "github.com/goxio/goxio/offload/transport/xdp"
	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/stats"
)

// The AF_XDP transport is opt-in: attaching an XDP program to an interface is intrusive (one
// owner per interface), so GOXIO_XDP names the interfaces it may take.
const (
	// xdpEnv: comma-separated interface names, or "all" (every Ethernet interface that is up and
	// has an IPv4 address); unset or empty: off.
	xdpEnv = "GOXIO_XDP"
	// xdpModeEnv: "native" or "generic" restricts how the steering program is attached
	// (default: native, then generic when the driver refuses).
	xdpModeEnv = "GOXIO_XDP_MODE"
	// xdpBusyPollEnv: microseconds of kernel busy polling asked for on the AF_XDP sockets
	// (SO_PREFER_BUSY_POLL, SO_BUSY_POLL); 0 or unset: none.
	xdpBusyPollEnv = "GOXIO_XDP_BUSY_POLL"
	// xdpTxDelayEnv: microseconds a datagram of a stream of sends may wait on a TX ring for a
	// kick shared with the next datagrams (offload/transport/xdp/kick.go) before the kicker
	// thread sends it; 0: every send kicks at once (no kicker thread). Default xdpTxDelay: 0,
	// opt-in, since a datagram that waits for a shared kick is lost if the program then calls
	// _exit or is killed within the delay, and a message on another socket may overtake it,
	// neither of which a kernel send allows.
	xdpTxDelayEnv = "GOXIO_XDP_TX_DELAY"
	xdpTxDelay    = 0
)

// xdpParams turns the environment into the transport's parameters; ok is false when the
// transport is off.
func xdpParams(p conf.Params, getenv func(string) string, log *zap.Logger) (xp xdptr.Params, ok bool) {
	v := strings.TrimSpace(getenv(xdpEnv))
	if v == "" || !p.OffloadedSockets {
		return xp, false
	}
	if v != "all" {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				xp.Interfaces = append(xp.Interfaces, name)
			}
		}
		if len(xp.Interfaces) == 0 {
			log.Warn("GOXIO_XDP names no interface: the AF_XDP transport stays off", zap.String("value", v))
			return xp, false
		}
	}
	switch m := getenv(xdpModeEnv); m {
	case "", "auto":
	case "native":
		xp.Program.Mode = xdp.ModeNative
	case "generic":
		xp.Program.Mode = xdp.ModeGeneric
	default:
		log.Warn("GOXIO_XDP_MODE is native, generic or auto: using auto", zap.String("value", m))
	}
	if b := getenv(xdpBusyPollEnv); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 || n > 1000000 {
			log.Warn("GOXIO_XDP_BUSY_POLL is microseconds (0..1000000): no busy polling", zap.String("value", b))
		} else {
			xp.Socket.BusyPollMicros = n
		}
	}
	delay := xdpTxDelay
	if d := getenv(xdpTxDelayEnv); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 1000000 {
			log.Warn("GOXIO_XDP_TX_DELAY is microseconds (0..1000000): using the default", zap.String("value", d),
				zap.Int("default", xdpTxDelay))
		} else {
			delay = n
		}
	}
	if delay > 0 {
		xp.Kicker = &cKicker{delay: int64(delay) * 1000}
	}
	xp.RxPoll = p.RxPoll
	xp.RxUDPPollOSRatio = p.RxUDPPollOSRatio
	xp.TxNonblockedEagains = p.TxNonblockedEagains
	return xp, true
}

// newXDP opens the AF_XDP transport's process state, or returns nil (UDP to and from NICs then
// goes through the kernel) when it is off or cannot start. Interfaces are attached when a
// socket first needs them; why one cannot be (another XDP program on it, missing capabilities,
// no XDP support) is logged once and shown per socket as its fallback reason.
func newXDP(p conf.Params, log *zap.Logger, st *stats.Writer) *xdptr.Env {
	xp, ok := xdpParams(p, os.Getenv, log)
	if !ok {
		return nil
	}
	if st != nil {
		xp.Stats = st
	}
	xp.Signals = sigCounters
	xp.AdoptFD = func(fd int) int { return offload.AdoptInternal(cTable{}, fd) }
	xp.ReleaseFD = func(fd int) { cTable{}.Set(fd, 0) }
	xp.OpenHigh = func(open func() error) error { return offload.OpenHigh(cTable{}, open) }
	xp.MarkFD = func(fd int) { cTable{}.Set(fd, offload.FlagInternal) }
	env, err := xdptr.NewEnv(xp, log)
	if err != nil {
		log.Warn("AF_XDP transport unavailable: UDP through network interfaces goes through the kernel", zap.Error(err))
		return nil
	}
	which := "every Ethernet interface with IPv4"
	if len(xp.Interfaces) > 0 {
		which = strings.Join(xp.Interfaces, ",")
	}
	log.Info("AF_XDP transport on", zap.String("interfaces", which))
	return env
}
