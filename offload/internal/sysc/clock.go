package sysc

import "time"

var epoch = time.Now()

// Nanotime is the library's one monotonic clock, in nanoseconds since the library started (the
// vDSO clock only: no timers).
func Nanotime() int64 { return int64(time.Since(epoch)) }
