package main

import (
	"os"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
)

// shmDirEnv names the directory of the shared-memory transport's segments; "off" disables it.
const shmDirEnv = "GOXIO_SHM_DIR"

// newSHM opens the shared-memory transport's process state, or returns nil (every offloaded
// socket then stays on the kernel) when it is off or cannot start.
func newSHM(p conf.Params, log *zap.Logger) *shmtr.Env {
	dir := os.Getenv(shmDirEnv)
	if dir == "off" || !p.OffloadedSockets {
		return nil
	}
	if dir == "" {
		dir = "/dev/shm"
	}
	env, err := shmtr.NewEnv(shmtr.Params{
		Dir:                 dir,
		RxPoll:              p.RxPoll,
		RxUDPPollOSRatio:    p.RxUDPPollOSRatio,
		RxBytesMin:          p.RxBytesMin,
		TxNonblockedEagains: p.TxNonblockedEagains,
	}, log)
	if err != nil {
		log.Warn("shared-memory transport unavailable: same-host UDP goes through the kernel", zap.Error(err))
		return nil
	}
	return env
}

func iomuxParams(p conf.Params) offload.IOMux {
	return offload.IOMux{SelectPoll: p.SelectPoll, SelectPollOSRatio: p.SelectPollOSRatio, SelectSkipOS: p.SelectSkipOS}
}
