package shm

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// SweepStale removes the inbox and ring segments in dir of this user's processes that died
// without closing them (SIGKILL, a crash, _exit, exec): files "goxio.<uid>.in.<pid>.<n>[...]"
// whose pid is gone (internal/shmseg: a directory read and a kill(2) per name, no file opened).
// Every engine runs it when it starts, whether or not it uses the transport; a live process's
// inboxes are never touched (a pid reused by an unrelated process keeps the dead one's files
// until that process exits). The pool names of rings kept for reuse, "goxio.ringpool.<pid>.<n>"
// (offload/shm ring_pool.go), go the same way when their sender is gone: they carry no uid, and
// another user's are not ours to remove (the directory's sticky bit refuses). It returns how many
// files it removed.
func SweepStale(dir string) int {
	prefix := "goxio." + strconv.Itoa(unix.Geteuid()) + ".in."
	n := shmseg.Sweeper{Prefix: prefix, PID: shmseg.PIDField(prefix)}.Sweep(dir)
	const pool = "goxio.ringpool."
	return n + shmseg.Sweeper{Prefix: pool, PID: shmseg.PIDField(pool)}.Sweep(dir)
}
