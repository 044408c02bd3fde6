package shm

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testDir returns an empty directory for segments: on tmpfs (/dev/shm) when there is one, else
// the test's temporary directory. It checks at cleanup that the test left no file behind
// (unless the test failed).
func testDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "goxio-shm-test-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	return dir
}

// dirFiles lists the files left in dir, but for the pool names of segments and rings this
// process created (they stay for reuse while the process lives: conn_pool_test.go and
// ring_pool_test.go check them).
func dirFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	own := connNamePrefix + "pool.new." + strconv.Itoa(os.Getpid()) + "."
	ownRing := "goxio.ringpool." + strconv.Itoa(os.Getpid()) + "."
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), own) && !strings.HasPrefix(e.Name(), ownRing) {
			names = append(names, e.Name())
		}
	}
	return names
}

// makeRecord builds a self-checking payload: u32 sender, u64 seq, body, u32 crc32 of the rest.
func makeRecord(buf []byte, sender uint32, seq uint64, size int) []byte {
	if size < 16 {
		size = 16
	}
	b := buf[:size]
	binary.LittleEndian.PutUint32(b[0:], sender)
	binary.LittleEndian.PutUint64(b[4:], seq)
	for i := 12; i < size-4; i++ {
		b[i] = byte(seq) ^ byte(i*7)
	}
	binary.LittleEndian.PutUint32(b[size-4:], crc32.ChecksumIEEE(b[:size-4]))
	return b
}

// checkRecord verifies a payload made by makeRecord and returns its sender and sequence.
func checkRecord(b []byte) (sender uint32, seq uint64, ok bool) {
	if len(b) < 16 {
		return 0, 0, false
	}
	if crc32.ChecksumIEEE(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint64(b[4:]), true
}

// sizeFor spreads record sizes over 16..1500 bytes, deterministically per sequence number.
func sizeFor(seq uint64) int { return 16 + int((seq*2654435761)%1485) }

// mustInbox creates an inbox and closes it at cleanup.
func mustInbox(t testing.TB, dir, name string, slots int) *Inbox {
	t.Helper()
	in, err := CreateInbox(dir, name, slots)
	if err != nil {
		t.Fatalf("CreateInbox: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// mustDial dials an inbox and closes the outlet at cleanup.
func mustDial(t testing.TB, dir, name string, ringBytes int) *Outlet {
	t.Helper()
	o, err := DialInbox(dir, name, ringBytes)
	if err != nil {
		t.Fatalf("DialInbox: %v", err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// drainOne refreshes and peeks once; it returns a copy of name and payload.
func drainOne(in *Inbox) (name, data []byte, err error) {
	n, d, err := in.Peek()
	if err == ErrEmpty {
		in.Refresh()
		n, d, err = in.Peek()
	}
	if err != nil {
		return nil, nil, err
	}
	name, data = append([]byte(nil), n...), append([]byte(nil), d...)
	in.Pop()
	return name, data, nil
}
