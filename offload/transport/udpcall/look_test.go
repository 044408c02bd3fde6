package udpcall

import (
	"syscall"
	"testing"

	"github.com/goxio/goxio/offload/internal/wait"
)

func TestKernelLook(t *testing.T) {
	calls, queued, shut := 0, false, false
	k := KernelLook{
		Now: func() (int, syscall.Errno, bool) {
			calls++
			if queued {
				return 5, 0, true
			}
			return 0, 0, false
		},
		Shut:  func() bool { return shut },
		Ratio: 3,
	}
	check := true
	if _, _, _, done := k.Look(&check, wait.Look{Polls: 0}, false); done || calls != 1 || check {
		t.Fatalf("a due look: done %v, %d kernel calls, check left %v", done, calls, check)
	}
	for polls := 1; polls <= 6; polls++ {
		k.Look(&check, wait.Look{Polls: polls}, false)
	}
	if calls != 3 {
		t.Fatalf("%d kernel calls after 6 spin polls with ratio 3, want 1+2", calls)
	}
	before := calls
	if k.Look(&check, wait.Look{Polls: 7, Last: true}, false); calls != before+1 {
		t.Fatalf("the call's last look at a poll that is not due made %d kernel calls, want 1", calls-before)
	}
	queued = true
	if n, errno, got, done := k.Look(&check, wait.Look{Polls: 9}, false); n != 5 || errno != 0 || !got || !done {
		t.Fatalf("a kernel datagram: %d %v got %v done %v", n, errno, got, done)
	}
	queued, shut = false, true
	if n, _, got, done := k.Look(&check, wait.Look{Polls: 12}, true); done {
		t.Fatalf("a non-blocking call after SHUT_RD goes on to EAGAIN, got %d got %v", n, got)
	}
	if n, errno, got, done := k.Look(&check, wait.Look{Polls: 12}, false); n != 0 || errno != 0 || got || !done {
		t.Fatalf("a blocking call after SHUT_RD: %d %v got %v done %v, want 0 done", n, errno, got, done)
	}
}
