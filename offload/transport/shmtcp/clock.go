package shmtcp

import "github.com/goxio/goxio/offload/internal/sysc"

// nanotime is the library's one monotonic clock (sysc.Nanotime).
func nanotime() int64 { return sysc.Nanotime() }
