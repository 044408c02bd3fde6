package udpcall

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestQuietSysmon: the thread found is another thread of the process than the caller and the
// main thread, and it runs SCHED_IDLE afterwards while the caller's policy is unchanged.
func TestQuietSysmon(t *testing.T) {
	tid, err := QuietSysmon()
	if err != nil {
		t.Fatal(err)
	}
	if tid == unix.Gettid() || tid == unix.Getpid() {
		t.Fatalf("QuietSysmon chose thread %d: the caller or the main thread", tid)
	}
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attr.Policy != unix.SCHED_IDLE {
		t.Fatalf("thread %d policy %d, want SCHED_IDLE (%d)", tid, attr.Policy, unix.SCHED_IDLE)
	}
	self, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if self.Policy != unix.SCHED_NORMAL {
		t.Fatalf("caller's policy became %d", self.Policy)
	}
}
