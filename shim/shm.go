package main

import (
	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	"github.com/goxio/goxio/offload/transport/shmtcp"
	"github.com/goxio/goxio/stats"
)

// newSHMTCP opens the shared-memory TCP transport's process state, or returns nil (TCP stays on
// the kernel) when it is off or cannot start.
func newSHMTCP(p conf.Params, log *zap.Logger) *shmtcp.Env {
	if !p.SHM || !p.SHMTCP || !p.OffloadedSockets {
		return nil
	}
	env, err := shmtcp.NewEnv(shmtcp.Params{
		Dir:           p.SHMDir,
		RxPoll:        p.RxPoll,
		RxPollOSRatio: p.RxUDPPollOSRatio,
		PairAfter:     p.TCPPairAfter,
		Signals:       sigCounters,
		AdoptFD:       func(fd int) int { return offload.AdoptInternal(cTable{}, fd) },
		ReleaseFD:     func(fd int) { cTable{}.Set(fd, 0) },
	}, log)
	if err != nil {
		log.Warn("shared-memory TCP transport unavailable: same-host TCP goes through the kernel", zap.Error(err))
		return nil
	}
	return env
}

// newSHM opens the shared-memory transport's process state, or returns nil (every offloaded
// socket then stays on the kernel) when it is off or cannot start.
func newSHM(p conf.Params, log *zap.Logger, st *stats.Writer) *shmtr.Env {
	if !p.SHM || !p.OffloadedSockets {
		return nil
	}
	var slots shmtr.RingSlots
	if st != nil {
		slots = st
	}
	env, err := shmtr.NewEnv(shmtr.Params{
		Stats:               slots,
		Dir:                 p.SHMDir,
		RxPoll:              p.RxPoll,
		RxUDPPollOSRatio:    p.RxUDPPollOSRatio,
		RxBytesMin:          p.RxBytesMin,
		TxNonblockedEagains: p.TxNonblockedEagains,
		QuietSysmon:         p.SHMSysmon != "normal",
		SysmonGuard:         sysmonGuard{},
		Signals:             sigCounters,
		AdoptFD:             func(fd int) int { return offload.AdoptInternal(cTable{}, fd) },
		ReleaseFD:           func(fd int) { cTable{}.Set(fd, 0) },
		KernelRoute:         kernelRoute,
		ListenerSeen:        listenerSeen,
	}, log)
	if err != nil {
		log.Warn("shared-memory transport unavailable: same-host UDP and TCP go through the kernel", zap.Error(err))
		return nil
	}
	return env
}

func iomuxParams(p conf.Params) offload.IOMux {
	return offload.IOMux{SelectPoll: p.SelectPoll, SelectPollOSRatio: p.SelectPollOSRatio, SelectSkipOS: p.SelectSkipOS,
		Signals: sigCounters}
}
