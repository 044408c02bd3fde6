package shm

import (
	"bytes"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
)

// poolFiles lists every file of dir (pool names included).
func poolFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// pair opens both ends of the connection local <-> remote and checks a byte each way.
func pair(t *testing.T, dir string, local, remote netip.AddrPort) (*Conn, *Conn) {
	t.Helper()
	a := mustOpen(t, connCfg(dir, local, remote, 8192, 8192))
	b := mustOpen(t, connCfg(dir, remote, local, 8192, 8192))
	if a.Side() != 0 || b.Side() != 1 {
		t.Fatalf("sides %d %d", a.Side(), b.Side())
	}
	for _, d := range [][2]*Conn{{a, b}, {b, a}} {
		if err := d[0].SwitchWrite(0); err != nil {
			t.Fatal(err)
		}
		if n, _, err := d[0].Write([][]byte{[]byte("xy")}); n != 2 || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
		if _, ok := d[1].ReaderSwitch(); !ok {
			t.Fatal("reader switch")
		}
		buf := make([]byte, 8)
		if n, _, err := d[1].Read([][]byte{buf}); n != 2 || err != nil || !bytes.Equal(buf[:2], []byte("xy")) {
			t.Fatalf("Read: %d %v %q", n, err, buf[:n])
		}
	}
	return a, b
}

// A segment the creator closed is reused by its next connection once side 1 released it (not
// before), works as a new one, and its file goes at DrainConnPool.
func TestConnPoolReuse(t *testing.T) {
	DrainConnPool()
	dir := testDir(t)
	a, b := pair(t, dir, testA, testB)
	dev, ino := a.dev, a.ino
	a.Close() // first: b still maps the segment
	c, d := pair(t, dir, netip.MustParseAddrPort("127.0.0.1:40001"), testB)
	if c.ino == ino {
		t.Fatal("a segment side 1 still maps was reused")
	}
	b.Close()
	c.Close()
	d.Close()
	if n := len(poolFiles(t, dir)); n != 2 {
		t.Fatalf("%d files with two segments pooled: %v", n, poolFiles(t, dir))
	}
	e, f := pair(t, dir, netip.MustParseAddrPort("127.0.0.1:40002"), testB)
	if e.dev != dev || e.ino != ino && e.ino != c.ino {
		t.Fatalf("a released segment was not reused (ino %d, pooled %d and %d)", e.ino, ino, c.ino)
	}
	if atomic.LoadUint64(word64(e.mem, sideOff(1)+sdTag))&tagReleased != 0 {
		t.Fatal("the reused segment still says side 1 released it")
	}
	e.Close()
	f.Close()
	DrainConnPool()
	if left := poolFiles(t, dir); len(left) != 0 {
		t.Fatalf("files left after DrainConnPool: %v", left)
	}
}

// Side 1 removes the pool name of a creator that died without closing; the creator's pool then
// drops the segment instead of reusing it under a name that is gone.
func TestConnPoolCreatorDead(t *testing.T) {
	DrainConnPool()
	dir := testDir(t)
	a, b := pair(t, dir, testA, testB)
	// Make side 0 look like a process that is gone (its pool name follows its pid).
	const gone = 4194000
	atomic.StoreUint64(word64(a.mem, sideOff(0)+sdTag), uint64(gone)<<32|tagReady)
	if err := os.Rename(a.pool.path, poolPath(dir, gone, a.pool.seq)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if left := poolFiles(t, dir); len(left) != 0 {
		t.Fatalf("files left after side 1 closed with its creator dead: %v", left)
	}
	a.Close()
	c, d := pair(t, dir, netip.MustParseAddrPort("127.0.0.1:40001"), testB)
	c.Close()
	d.Close()
	DrainConnPool()
	if left := poolFiles(t, dir); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
}
