package main

import (
	"strings"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload"
	xdptr "github.com/goxio/goxio/offload/transport/xdp"
	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/stats"
)

// The AF_XDP transport is opt-in: attaching an XDP program to an interface is intrusive (one
// owner per interface), so GOXIO_XDP (conf.Params.XDP) names the interfaces it may take, and
// GOXIO_XDP_MODE, GOXIO_XDP_BUSY_POLL and GOXIO_XDP_TX_DELAY tune it. conf checks the values
// (a bad one is warned about and the default kept).
//
// GOXIO_XDP_TX_DELAY is opt-in (0 by default): a datagram that waits for a kick shared with the
// next datagrams (offload/transport/xdp/kick.go) is lost if the program then calls _exit or is
// killed within the delay, and a message on another socket may overtake it, neither of which a
// kernel send allows.

// xdpParams turns the parameters into the transport's; ok is false when the transport is off.
func xdpParams(p conf.Params) (xp xdptr.Params, ok bool) {
	v := strings.TrimSpace(p.XDP)
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
			return xp, false // conf refused such a value already
		}
	}
	switch p.XDPMode {
	case "native":
		xp.Program.Mode = xdp.ModeNative
	case "generic":
		xp.Program.Mode = xdp.ModeGeneric
	}
	xp.Socket.BusyPollMicros = p.XDPBusyPoll
	if p.XDPTxDelay > 0 {
		xp.Kicker = &cKicker{delay: int64(p.XDPTxDelay) * 1000}
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
	xp, ok := xdpParams(p)
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
