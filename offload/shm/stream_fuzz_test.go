package shm

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// Fuzzing what a connection end reads from shared memory. Seeds live in testdata/fuzz; run with
//
//	go test -run '^$' -fuzz FuzzConnHeader -fuzztime 60s ./offload/shm
//	go test -run '^$' -fuzz FuzzStreamOps -fuzztime 60s ./offload/shm

// anonSegment maps size bytes of shared anonymous memory (a stand-in for a segment file).
func anonSegment(t testing.TB, size int) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// validHeader returns the header page of a valid segment made by testA's end, sizes 4 KiB.
func validHeader() []byte {
	mem := make([]byte, pageSize)
	w := func(off int, v uint64) { binary.NativeEndian.PutUint64(mem[off:], v) }
	w(cnMagic, connMagic)
	w(cnVersion, connVersion)
	w(cnCap0, MinStreamBytes)
	w(cnCap1, MinStreamBytes)
	w(cnNetNS, 7)
	w(cnToken, 1)
	a, b := canonEndpoint(testA), canonEndpoint(testB)
	copy(mem[cnEndA:], a.addr[:])
	w(cnEndA+16, uint64(a.port))
	copy(mem[cnEndB:], b.addr[:])
	w(cnEndB+16, uint64(b.port))
	pid, start, _ := selfIdentity()
	w(sideOff(0)+sdTag, uint64(pid)<<32|tagReady)
	w(sideOff(0)+sdStart, start)
	return mem
}

// exercise runs every method of c a few times: nothing may panic, hang or go out of bounds.
func exercise(t *testing.T, c *Conn) {
	buf := make([]byte, 3*MaxStreamBytes/1024)
	tx, rx := c.Capacities()
	c.ReaderSwitch()
	c.SwitchWrite(0)
	for range 3 {
		if n, _, _ := c.Write([][]byte{buf, buf}); n < 0 || n > tx {
			t.Fatalf("Write %d into %d", n, tx)
		}
		if n, _, _ := c.Read([][]byte{buf, buf}); n < 0 || n > rx {
			t.Fatalf("Read %d from %d", n, rx)
		}
		if n, _ := c.Peek([][]byte{buf}, 100); n < 0 || n > len(buf) {
			t.Fatalf("Peek %d", n)
		}
		if r, s, u := c.Readable(), c.Space(), c.Unread(); r < 0 || r > rx || s < 0 || s > tx || u < 0 || u > tx {
			t.Fatalf("Readable %d Space %d Unread %d (caps %d %d)", r, s, u, tx, rx)
		}
		c.WaitSpace(1 << 30)
		c.CancelWaitSpace()
		c.SpinBegin()
		c.SpinEnd()
		c.ClearWake()
		c.PeerState()
		c.PeerAttached()
		c.Stats()
	}
}

// FuzzConnHeader: an arbitrary header page (and file size) in front of an attaching end. It
// is refused, or accepted with capacities matching the size, and then every method stays
// within bounds.
func FuzzConnHeader(f *testing.F) {
	f.Add(validHeader(), uint8(0), uint8(0))
	f.Add(validHeader(), uint8(1), uint8(2))
	f.Add(make([]byte, 64), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, hdr []byte, s0, s1 uint8) {
		size := connSize(MinStreamBytes<<(s0%3), MinStreamBytes<<(s1%3))
		mem := anonSegment(t, size)
		copy(mem[:pageSize], hdr)
		cap0, cap1, v := judgeConn(mem, connCfg("", testB, testA, 0, 0))
		if v != joinable {
			shmseg.Unmap(mem)
			return
		}
		if connSize(cap0, cap1) != size || !validStreamCap(cap0) || !validStreamCap(cap1) {
			t.Fatalf("accepted capacities %d %d for %d bytes", cap0, cap1, size)
		}
		c := newConn(mem, 1, cap0, cap1, "fuzz", "")
		exercise(t, c)
		if _, err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzStreamOps: both ends over one mapping, driven by ops; some ops scribble arbitrary values
// on the shared words (positions, K, states, wake words) as a hostile peer could. The ends must
// never panic or exceed their bounds, and as long as nothing was scribbled every byte read must
// be the byte written.
func FuzzStreamOps(f *testing.F) {
	f.Add([]byte{0, 200, 1, 100, 2, 50, 3, 0, 1, 255})
	f.Add([]byte{0, 255, 0, 255, 6, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 10})
	f.Add([]byte{0, 30, 6, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 10, 4, 0, 1, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cap0, cap1 := uint64(MinStreamBytes), uint64(2*MinStreamBytes)
		mem := anonSegment(t, connSize(cap0, cap1))
		defer shmseg.Unmap(mem)
		initConn(mem, cap0, cap1, connCfg("", testA, testB, 0, 0), 1, 1, 1)
		ends := [2]*Conn{newConn(mem, 0, cap0, cap1, "f", ""), newConn(mem, 1, cap0, cap1, "f", "")}
		ends[0].SwitchWrite(0)
		ends[1].SwitchWrite(0)
		var wpos, rpos [2]uint64
		scribbled := false
		buf := make([]byte, 3*cap1)
		words := []int{drTail, drHead, drKernel, drSpaceWait}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			s := int(op>>4) & 1
			c := ends[s]
			tx, rx := c.Capacities()
			switch op % 8 {
			case 0: // write arg*40 bytes
				n, _, err := c.Write([][]byte{pattern(wpos[s], arg*40)})
				if n < 0 || n > tx || n > 0 && err != nil {
					t.Fatalf("Write = %d %v", n, err)
				}
				wpos[s] += uint64(n)
			case 1: // read arg*40 bytes
				dst := buf[:arg*40]
				n, _, err := c.Read([][]byte{dst})
				if n < 0 || n > rx || n > 0 && err != nil {
					t.Fatalf("Read = %d %v", n, err)
				}
				if !scribbled && !bytes.Equal(dst[:n], pattern(rpos[s], n)) {
					t.Fatalf("read bytes differ at %d", rpos[s])
				}
				rpos[s] += uint64(n)
			case 2:
				if n, _ := c.Peek([][]byte{buf[:arg*40]}, arg); n < 0 || n > rx {
					t.Fatalf("Peek = %d", n)
				}
			case 3:
				if r, sp, u := c.Readable(), c.Space(), c.Unread(); r < 0 || r > rx || sp < 0 || sp > tx || u < 0 || u > tx {
					t.Fatalf("Readable %d Space %d Unread %d", r, sp, u)
				}
			case 4:
				c.WaitSpace(arg * 100)
			case 5:
				if arg&1 != 0 {
					c.ShutdownWrite()
				} else {
					c.ShutdownRead()
				}
			case 6: // scribble: next 8 bytes are the value
				var v uint64
				if i+10 <= len(ops) {
					v = binary.NativeEndian.Uint64(ops[i+2 : i+10])
					i += 8
				}
				scribbled = true
				switch k := arg % 7; {
				case k < 4:
					atomic.StoreUint64(word64(mem, dirOff(arg>>3&1)+words[k]), v)
				case k == 4:
					atomic.StoreUint64(word64(mem, sideOff(arg>>3&1)+sdFlags), v)
				case k == 5:
					atomic.StoreUint32(word32(mem, dirOff(arg>>3&1)+drWakePend), uint32(v))
				default:
					atomic.StoreUint32(word32(mem, dirOff(arg>>3&1)+drSpinners), uint32(v))
				}
			case 7:
				c.SpinBegin()
				c.Stats()
				c.ReaderSwitch()
				c.SpinEnd()
				c.ClearWake()
			}
		}
	})
}

// TestFuzzSeedJoinable keeps FuzzConnHeader's first seed meaningful: a valid header is joined.
func TestFuzzSeedJoinable(t *testing.T) {
	mem := anonSegment(t, connSize(MinStreamBytes, MinStreamBytes))
	defer shmseg.Unmap(mem)
	copy(mem, validHeader())
	if _, _, v := judgeConn(mem, connCfg("", testB, testA, 0, 0)); v != joinable {
		t.Fatalf("verdict %d", v)
	}
	if _, _, v := judgeConn(mem, connCfg("", testA, testB, 0, 0)); v != busy {
		t.Fatalf("our own endpoint's live segment: verdict %d", v)
	}
}
