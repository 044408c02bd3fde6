package udpcall

import (
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/wait"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Invariant: the buffers handed over as uintptr are mmapped (not Go memory) and stay mapped for
// the test.

func TestParseRx(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	base := uintptr(unsafe.Pointer(&mem[0]))
	var arr [MaxBufs][]byte
	rc, ok := ParseRx(&transport.Call{Op: transport.OpRecvfrom, A: [5]uintptr{base, 100, unix.MSG_PEEK, base + 200, base + 300}}, arr[:0])
	if !ok || rc.Bad || len(rc.Bufs) != 1 || len(rc.Bufs[0]) != 100 || rc.Flags != unix.MSG_PEEK || rc.NamePtr != base+200 || rc.NameLen == nil {
		t.Fatalf("recvfrom: ok %v %+v", ok, rc)
	}
	rc, ok = ParseRx(&transport.Call{Op: transport.OpRead, A: [5]uintptr{0, 30}}, arr[:0])
	if !ok || !rc.Bad {
		t.Fatalf("read into NULL: ok %v bad %v, want a bad call", ok, rc.Bad)
	}
	if _, ok = ParseRx(&transport.Call{Op: transport.OpReadv, A: [5]uintptr{base, 1 << 20}}, arr[:0]); ok {
		t.Fatal("readv with more iovecs than IOV_MAX accepted")
	}
	if _, ok = ParseRx(&transport.Call{Op: transport.OpWrite}, arr[:0]); ok {
		t.Fatal("write parsed as a receive")
	}
}

func TestWaitTimeout(t *testing.T) {
	var w wait.Call
	w.Start(1e6, nil) // 1 ms
	if e := w.Check(); e != 0 {
		t.Fatalf("Check at once = %v", e)
	}
	if r := w.Timeout(0); r == nil || r.Nano() > 1e6 {
		t.Fatalf("Timeout(0) = %v", r)
	}
	for sysc.Nanotime() < w.Deadline {
	}
	if e := w.Check(); e != unix.EAGAIN {
		t.Fatalf("Check after the deadline = %v, want EAGAIN", e)
	}
	var none wait.Call
	none.Start(0, nil)
	if none.Timeout(0) != nil || none.Check() != 0 {
		t.Fatal("a wait without timeout has a deadline")
	}
}
