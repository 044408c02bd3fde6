package offload

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/wait"
)

// WatchCrowd gives the engine's waits a descriptor of /proc/loadavg of their own, internal in
// table, so that their looks at the machine's crowd (wait.Crowded) are one pread: without it
// each look opens and closes the file, a descriptor the program could glimpse.
func WatchCrowd(table FDTable) {
	fd, err := sysc.Open("/proc/loadavg", 0)
	if err != nil {
		return
	}
	wait.UseLoadavg(AdoptInternal(table, fd))
}

// ShareCrowd makes the engine's waits count, and see, the waits that a crowded machine put to
// sleep in every goxio process of the user (wait.ShareHeld: a table in the segment directory
// dir). Without it a wait sees only the runnable threads.
func ShareCrowd(dir string) error { return wait.ShareHeld(dir, sysc.Geteuid()) }

// CountCrowdSleeps makes the engine's waits count, in word (the statistics' GlobalCrowdSleeps),
// each spin they ended because the machine was crowded; nil stops it.
func CountCrowdSleeps(word *uint64) { wait.CountCrowdSleeps(word) }

// KernelSendHandoff gives the engine's waits the preload library's words that its sends set
// (shim/preload/ksend.c, rsend.c: sends that skip the engine): handoff by a kernel send (the next
// spin yields once, as after the engine's own kernel sends: wait.Handoff), rang by a ring send
// that rang a doorbell (the next spin looks at the crowd, as after the engine's own: wait.Woke).
func KernelSendHandoff(handoff, rang *atomic.Uint32) {
	wait.UseHandoffWord(handoff)
	wait.UseRangWord(rang)
}
