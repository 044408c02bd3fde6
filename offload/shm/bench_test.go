package shm

import (
	"testing"
)

// BenchmarkSendPeekPop64 is the hot path: one 64-byte datagram with a sockaddr_in name through
// Send, Peek and Pop on one thread.
func BenchmarkSendPeekPop64(b *testing.B) {
	dir := testDir(b)
	in := mustInbox(b, dir, "bench", 4)
	o := mustDial(b, dir, "bench", 1<<20)
	name := make([]byte, 16)
	payload := make([]byte, 64)
	bufs := [][]byte{payload}
	in.SpinBegin() // a polling receiver: no wake-ups asked
	defer in.SpinEnd()
	in.Refresh()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := o.Send(name, bufs, 64); err != nil {
			b.Fatal(err)
		}
		_, d, err := in.Peek()
		if err != nil || len(d) != 64 {
			b.Fatal(err)
		}
		in.Pop()
	}
}

// BenchmarkSend64 measures Send alone (the receiver drains every 1000 datagrams, untimed).
func BenchmarkSend64(b *testing.B) {
	dir := testDir(b)
	in := mustInbox(b, dir, "bsend", 4)
	o := mustDial(b, dir, "bsend", 1<<20)
	name := make([]byte, 16)
	bufs := [][]byte{make([]byte, 64)}
	in.SpinBegin()
	defer in.SpinEnd()
	in.Refresh()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := o.Send(name, bufs, 64); err != nil {
			b.Fatal(err)
		}
		if n++; n == 1000 {
			b.StopTimer()
			for ; n > 0; n-- {
				in.Peek()
				in.Pop()
			}
			b.StartTimer()
		}
	}
}

// BenchmarkPeekPopEmpty is a receiver polling an idle inbox with one ring.
func BenchmarkPeekPopEmpty(b *testing.B) {
	dir := testDir(b)
	in := mustInbox(b, dir, "bempty", 4)
	mustDial(b, dir, "bempty", 0)
	in.Refresh()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := in.Peek(); err != ErrEmpty {
			b.Fatal(err)
		}
	}
}

// BenchmarkPending is the receiver's "anything there?" check with one idle ring.
func BenchmarkPending(b *testing.B) {
	dir := testDir(b)
	in := mustInbox(b, dir, "bpend", 4)
	mustDial(b, dir, "bpend", 0)
	in.Refresh()
	b.ReportAllocs()
	for b.Loop() {
		if in.Pending() {
			b.Fatal("pending")
		}
	}
}

// BenchmarkRefreshIdle is Refresh when nothing changed.
func BenchmarkRefreshIdle(b *testing.B) {
	dir := testDir(b)
	in := mustInbox(b, dir, "bref", 4)
	mustDial(b, dir, "bref", 0)
	in.Refresh()
	b.ReportAllocs()
	for b.Loop() {
		in.Refresh()
	}
}
