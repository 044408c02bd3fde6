package umem

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultRecovered checks that a bad program address becomes a recoverable fault and that
// other panics are not swallowed.
func TestFaultRecovered(t *testing.T) {
	Protect()
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	addr := Addr(mem[:1])
	for name, f := range map[string]func(){
		"unmapped read": func() { sink += Bytes(addr, 8)[3] },
		"NULL buffer":   func() { _ = Bytes(0, 8) },
		"NULL iovec": func() {
			iov := make([]unix.Iovec, 1)
			iov[0].SetLen(5)
			Iovecs(nil, Addr(unsafeBytes(iov)), 1)
		},
	} {
		faulted := func() (got bool) {
			defer func() { got = Fault(recover()) }()
			f()
			return false
		}()
		if !faulted {
			t.Errorf("%s: no fault reported", name)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a plain panic was swallowed")
		}
	}()
	func() {
		defer func() { Fault(recover()) }()
		panic("a bug")
	}()
}

var sink byte

func TestScatter(t *testing.T) {
	a, b := make([]byte, 3), make([]byte, 4)
	if n := Scatter([][]byte{a, b}, []byte("hello")); n != 5 || string(a) != "hel" || string(b[:2]) != "lo" {
		t.Fatalf("scatter: %d %q %q", n, a, b)
	}
}
