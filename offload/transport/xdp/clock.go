package xdp

import "time"

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds (no timers: the vDSO clock only).
func nanotime() int64 { return int64(time.Since(epoch)) }
