package stats

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// segmentBytes returns a copy of a live segment's file with a few sockets,
// rings and groups in it.
func segmentBytes(t testing.TB) []byte {
	t.Helper()
	w := newWriter(t, 4)
	s := w.Open(3)
	s.SetInfo(SocketInfo{Family: 2, Type: 2, Inode: 1})
	s.CountRx(false, 10)
	s.JoinGroup(mustAddr("224.0.0.9"))
	w.OpenRing(TransportSHM, "ring")
	w.OpenPool("pool").SetSize(4, 2)
	w.OpenEpoll(9).CountCall()
	b, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeSegment(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "goxiostat.1")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func setWord(b []byte, i int, v uint64) { binary.LittleEndian.PutUint64(b[i*8:], v) }

func TestOpenRejectsBadFiles(t *testing.T) {
	good := segmentBytes(t)
	cases := []struct {
		name string
		data func() []byte
		want error
	}{
		{"empty", func() []byte { return nil }, ErrNotReady},
		{"short", func() []byte { return good[:100] }, ErrTruncated},
		{"garbage", func() []byte { return make([]byte, 8192) }, ErrNotReady},
		{"not a segment", func() []byte {
			b := make([]byte, 8192)
			copy(b, "this is not a goxio segment at all")
			return b
		}, ErrNotSegment},
		{"layout version", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hVersion, 99)
			return b
		}, ErrLayoutVersion},
		{"still creating", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hState, stateInit)
			return b
		}, ErrNotReady},
		{"truncated half", func() []byte { return good[:len(good)/2] }, ErrTruncated},
		{"socket count too big", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hSockCount, 1<<40)
			return b
		}, ErrCorrupt},
		{"socket area past end", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hSockCount, 100000)
			setWord(b, hSize, uint64(len(b)))
			return b
		}, ErrTruncated},
		{"slot too small", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hSockWords, 3)
			return b
		}, ErrCorrupt},
		{"offset inside header", func() []byte {
			b := append([]byte{}, good...)
			setWord(b, hRingOff, 1)
			return b
		}, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seg, err := OpenSegment(writeSegment(t, c.data()))
			if err == nil {
				seg.Close()
				t.Fatalf("OpenSegment succeeded")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
	var le *LayoutError
	b := append([]byte{}, good...)
	setWord(b, hVersion, 7)
	if _, err := OpenSegment(writeSegment(t, b)); !errors.As(err, &le) || le.Got != 7 || le.Want != LayoutVersion {
		t.Errorf("layout error %v", err)
	}
	if _, err := OpenSegment(t.TempDir()); !errors.Is(err, ErrNotSegment) {
		t.Errorf("directory: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSegment(fifo); !errors.Is(err, ErrNotSegment) {
		t.Errorf("fifo: %v", err)
	}
	if _, err := OpenSegment(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestCorruptInfoAndSlots: a segment whose info area or slots are garbage
// gives errors or odd values, never a crash; a slot stuck mid-update is
// skipped as busy.
func TestCorruptInfoAndSlots(t *testing.T) {
	good := segmentBytes(t)
	g := newGeometry(4, int(binary.LittleEndian.Uint64(good[hInfoWords*8:])))
	b := append([]byte{}, good...)
	setWord(b, g.infoOff, 0xffff_ffff) // info length beyond the area
	seg, err := OpenSegment(writeSegment(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if _, err := seg.Snapshot(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt info: %v", err)
	}

	b = append([]byte{}, good...)
	setWord(b, g.sockOff+sSeq, 7) // odd forever: writer died mid-update
	seg2, err := OpenSegment(writeSegment(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer seg2.Close()
	snap, err := seg2.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Busy != 1 || len(snap.Sockets) != 0 {
		t.Errorf("stuck slot: busy %d sockets %d", snap.Busy, len(snap.Sockets))
	}
}

// TestTruncatedUnderMapping truncates the file after the reader mapped it:
// the next snapshot touches pages that no longer exist and must report an
// error instead of dying of SIGBUS.
func TestTruncatedUnderMapping(t *testing.T) {
	p := writeSegment(t, segmentBytes(t))
	seg, err := OpenSegment(p)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if err := os.Truncate(p, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := seg.Snapshot(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("snapshot of a truncated mapping: %v", err)
	}
	if err := seg.Zero(nil); !errors.Is(err, ErrTruncated) {
		t.Fatalf("zero of a truncated mapping: %v", err)
	}
}

// FuzzReader feeds arbitrary bytes to the reader as a segment: it must
// return errors, never panic or hang.
func FuzzReader(f *testing.F) {
	good := segmentBytes(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:headerWords*8])
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<20 {
			return
		}
		words := make([]uint64, len(data)/8)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(data[i*8:])
		}
		seg, err := newSegmentFromWords(words)
		if err != nil {
			return
		}
		snap, err := seg.Snapshot()
		if err == nil {
			for _, s := range snap.Sockets {
				_ = FormatSocket(s, "")
			}
			_ = Rates(snap, snap, 1)
		}
		_ = seg.Zero(nil)
		if c, err := seg.Post(CmdSetLogLevel, 1, 0); err == nil {
			_ = c
		}
	})
}

// FuzzDecodeInfo checks the info area decoder alone.
func FuzzDecodeInfo(f *testing.F) {
	f.Add(encodeInfo(ProcessInfo{Cmdline: []string{"a", "b"}, AppID: "x", Version: "1",
		Params: []Param{{"A", "1"}}}))
	f.Add([]byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > infoMaxBytes/2 {
			return
		}
		info, err := decodeInfo(b)
		if err != nil {
			return
		}
		again, err := decodeInfo(encodeInfo(info))
		if err != nil || len(again.Cmdline) != len(info.Cmdline) || again.AppID != info.AppID {
			t.Fatalf("round trip: %v %+v %+v", err, info, again)
		}
	})
}
