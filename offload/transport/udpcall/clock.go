package udpcall

import "github.com/goxio/goxio/offload/internal/sysc"

// Nanotime is the library's one monotonic clock (sysc.Nanotime), for code outside offload
// (the shim's AF_XDP kick thread) that must read the transports' times.
func Nanotime() int64 { return sysc.Nanotime() }
