// Package capture lets `goxio capture` see the traffic goxio's fast paths carry, the way tcpdump
// sees the kernel's.
//
// The tool creates a segment (layout.go) holding the capture's control (snap length, trigger
// state, classic BPF programs compiled by libpcap in the tool) and a trace ring, then stores the
// segment's generation in the process's statistics segment (the capture word). Every send and
// receive site of a fast path calls a tap (tap.go) guarded by On, one relaxed load of that word:
// zero costs nothing more. A non-zero word makes the first tap map the segment (attach.go); from
// then on each packet gets the headers it would have had through the kernel (frame.go), the
// programs run on it with golang.org/x/net/bpf (filter.go) and a matching packet is copied, up to
// the snap length, into the trace ring (ring.go), or dropped and counted when the ring is full:
// the program never waits for the tool. The tool drains the ring with Reader and asks for a
// detach by setting the word's detach bit; a tap acknowledges by unmapping and clearing the word.
// A tool that died (SIGKILL) is noticed by the taps within half a second and the capture ends the
// same way.
package capture
