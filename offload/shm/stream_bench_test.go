package shm

import (
	"sync"
	"testing"
)

// BenchmarkStreamRoundTrip64 is the hot path of a request-response: a 64-byte Write on one end,
// the Read on the other, and back, on one thread (a polling reader: no wake-ups).
func BenchmarkStreamRoundTrip64(b *testing.B) {
	dir := testDir(b)
	x, y := connPair(b, dir, 65536, 65536)
	x.SpinBegin()
	y.SpinBegin()
	defer x.SpinEnd()
	defer y.SpinEnd()
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	out, in := [][]byte{msg}, [][]byte{buf}
	b.ReportAllocs()
	b.SetBytes(128)
	for b.Loop() {
		if n, _, err := x.Write(out); n != 64 || err != nil {
			b.Fatal(n, err)
		}
		if n, _, err := y.Read(in); n != 64 || err != nil {
			b.Fatal(n, err)
		}
		if n, _, err := y.Write(out); n != 64 || err != nil {
			b.Fatal(n, err)
		}
		if n, _, err := x.Read(in); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkStreamWriteRead64 is one 64-byte Write and its Read on one thread.
func BenchmarkStreamWriteRead64(b *testing.B) {
	dir := testDir(b)
	x, y := connPair(b, dir, 65536, 65536)
	y.SpinBegin()
	defer y.SpinEnd()
	out, in := [][]byte{make([]byte, 64)}, [][]byte{make([]byte, 64)}
	b.ReportAllocs()
	b.SetBytes(64)
	for b.Loop() {
		if n, _, err := x.Write(out); n != 64 || err != nil {
			b.Fatal(n, err)
		}
		if n, _, err := y.Read(in); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkStreamBulk is bulk throughput: a writer goroutine pushes 64 KiB writes through a
// 1 MiB ring, a reader goroutine drains 64 KiB reads, both polling; bytes/s is the figure.
func BenchmarkStreamBulk(b *testing.B) {
	dir := testDir(b)
	x, y := connPair(b, dir, 1<<20, 1<<20)
	y.SpinBegin()
	defer y.SpinEnd()
	const chunk = 64 << 10
	total := uint64(b.N) * chunk
	b.ReportAllocs()
	b.SetBytes(chunk)
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, chunk)
		for sent := uint64(0); sent < total; {
			n, _, err := x.Write([][]byte{buf[:min(chunk, total-sent)]})
			if err != nil && err != ErrFull {
				b.Error(err)
				return
			}
			sent += uint64(n)
		}
	}()
	in := [][]byte{make([]byte, chunk)}
	for got := uint64(0); got < total; {
		n, _, err := y.Read(in)
		if err != nil && err != ErrEmpty {
			b.Fatal(err)
		}
		got += uint64(n)
	}
	wg.Wait()
}
