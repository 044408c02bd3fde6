package shm

import (
	"strconv"

	"github.com/goxio/goxio/internal/shmseg"
)

// sweepStale removes the inbox and ring segments of this user's processes that died without
// closing them (SIGKILL, a crash, _exit, exec): files "goxio.<uid>.in.<pid>.<n>[...]" whose pid
// is gone (internal/shmseg: a directory read and a kill(2) per name, no file opened). Run once
// when a process starts the transport; a live process's inboxes are never touched (a pid reused
// by an unrelated process keeps the dead one's files until that process exits).
func sweepStale(dir string, uid int) int {
	prefix := "goxio." + strconv.Itoa(uid) + ".in."
	return shmseg.Sweeper{Prefix: prefix, PID: shmseg.PIDField(prefix)}.Sweep(dir)
}
