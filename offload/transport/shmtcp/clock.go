package shmtcp

import "time"

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds (the vDSO clock only: no timers).
func nanotime() int64 { return int64(time.Since(epoch)) }
