package shm

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mapsMentioning counts the lines of /proc/self/maps naming a file under dir, and all lines.
func mapsMentioning(t *testing.T, dir string) (ours, all int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		all++
		if strings.Contains(l, dir+"/") {
			ours++
		}
	}
	return ours, all
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fsUsed returns the bytes in use on the file system holding dir.
func fsUsed(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return (st.Blocks - st.Bfree) * uint64(st.Bsize)
}

// TestConn5000: 5000 connections open at once (both ends in this process: 10000 mappings),
// each used in both directions, then closed. Afterwards no file, no mapping and no descriptor
// is left, and the file system's usage is back where it was (a private tmpfs when we may mount
// one, so that the figure is exact).
func TestConn5000(t *testing.T) {
	const conns = 5000
	dir := t.TempDir()
	private := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256m,mode=0700") == nil
	if private {
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	} else {
		dir = testDir(t)
	}
	usedBefore := fsUsed(t, dir)
	oursBefore, allBefore := mapsMentioning(t, dir)
	fdsBefore := openFDs(t)

	type pair struct{ a, b *Conn }
	pairs := make([]pair, 0, conns)
	msg := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	buf := make([]byte, 128)
	for i := range conns {
		la := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}), uint16(30000+i))
		a, err := OpenConn(connCfg(dir, la, testB, 0, 0))
		if err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		b, err := OpenConn(connCfg(dir, testB, la, 0, 0))
		if err != nil {
			t.Fatalf("conn %d attach: %v", i, err)
		}
		if a.Side() != 0 || b.Side() != 1 {
			t.Fatalf("conn %d: sides %d %d", i, a.Side(), b.Side())
		}
		a.SwitchWrite(0)
		b.SwitchWrite(0)
		pairs = append(pairs, pair{a, b})
	}
	ours, all := mapsMentioning(t, dir)
	used := fsUsed(t, dir)
	t.Logf("%d connections open: %d mappings of ours (%d in all), %d bytes in use, %d files, %d fds",
		conns, ours, all, used-usedBefore, len(dirFiles(t, dir)), openFDs(t)-fdsBefore)
	if ours != 2*conns || openFDs(t) != fdsBefore || len(dirFiles(t, dir)) != 0 {
		t.Fatalf("while open: %d mappings, %d fds more, files %d", ours, openFDs(t)-fdsBefore, len(dirFiles(t, dir)))
	}
	if private && used-usedBefore < conns*uint64(connSize(MinStreamBytes, MinStreamBytes)) {
		t.Fatalf("only %d bytes in use for %d connections", used-usedBefore, conns)
	}
	for i, p := range pairs {
		for _, d := range [][2]*Conn{{p.a, p.b}, {p.b, p.a}} {
			if n, _, err := d[0].Write([][]byte{msg}); n != len(msg) || err != nil {
				t.Fatalf("conn %d: Write %d %v", i, n, err)
			}
			if n, _, err := d[1].Read([][]byte{buf}); n != len(msg) || err != nil || !bytes.Equal(buf[:n], msg) {
				t.Fatalf("conn %d: Read %d %v", i, n, err)
			}
		}
	}
	for i, p := range pairs {
		if _, err := p.a.Close(); err != nil {
			t.Fatalf("conn %d: close a: %v", i, err)
		}
		if _, err := p.b.Close(); err != nil {
			t.Fatalf("conn %d: close b: %v", i, err)
		}
	}
	DrainConnPool() // the segments kept for reuse go at exit
	ours, all = mapsMentioning(t, dir)
	t.Logf("after close: %d mappings of ours (%d in all, %d before), %d bytes in use, %d fds more",
		ours, all, allBefore, fsUsed(t, dir)-usedBefore, openFDs(t)-fdsBefore)
	if ours != oursBefore || openFDs(t) != fdsBefore || len(dirFiles(t, dir)) != 0 {
		t.Fatalf("leak: %d mappings, %d fds more, files %v", ours, openFDs(t)-fdsBefore, dirFiles(t, dir))
	}
	if private && fsUsed(t, dir) != usedBefore {
		t.Fatalf("file system usage %d, was %d", fsUsed(t, dir), usedBefore)
	}
	// Go's own mappings may grow with the heap, never by thousands.
	if all > allBefore+200 {
		t.Fatalf("%d mappings now, %d before", all, allBefore)
	}
}
