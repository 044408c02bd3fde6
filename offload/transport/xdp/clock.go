package xdp

import "github.com/goxio/goxio/offload/transport/udpcall"

// nanotime is the monotonic clock of udpcall.Wait's deadlines (the vDSO clock only: no timers).
func nanotime() int64 { return udpcall.Nanotime() }
