package shm

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

var (
	testA = netip.MustParseAddrPort("127.0.0.1:40000")
	testB = netip.MustParseAddrPort("127.0.0.1:5201")
)

// connCfg is the configuration of the end at local talking to remote.
func connCfg(dir string, local, remote netip.AddrPort, send, recv int) ConnConfig {
	return ConnConfig{Dir: dir, NetNS: 7, Local: local, Remote: remote, SendBytes: send, RecvBytes: recv}
}

// mustOpen opens one end and closes it at cleanup.
func mustOpen(t testing.TB, cfg ConnConfig) *Conn {
	t.Helper()
	c, err := OpenConn(cfg)
	if err != nil {
		t.Fatalf("OpenConn %v: %v", cfg.Local, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connPair opens both ends of testA-testB in dir, both switched with K = 0.
func connPair(t testing.TB, dir string, capA, capB int) (a, b *Conn) {
	t.Helper()
	a = mustOpen(t, connCfg(dir, testA, testB, capA, capB))
	b = mustOpen(t, connCfg(dir, testB, testA, capB, capA))
	if a.Side() != 0 || b.Side() != 1 {
		t.Fatalf("sides %d %d", a.Side(), b.Side())
	}
	if err := a.SwitchWrite(0); err != nil {
		t.Fatal(err)
	}
	if err := b.SwitchWrite(0); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestConnName(t *testing.T) {
	v4 := ConnName(1, testA, testB)
	if v4 != ConnName(1, testB, testA) {
		t.Fatal("name depends on which end computes it")
	}
	mapped := netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), 5201)
	if v4 != ConnName(1, testA, mapped) || v4 != ConnName(1, mapped, testA) {
		t.Fatal("an IPv4-mapped address names another segment")
	}
	if v4 == ConnName(2, testA, testB) {
		t.Fatal("another namespace gives the same name")
	}
	if v4 == ConnName(1, testA, netip.MustParseAddrPort("127.0.0.1:5202")) {
		t.Fatal("another port gives the same name")
	}
	x := netip.MustParseAddrPort("[fe80::1%eth0]:80")
	y := netip.MustParseAddrPort("[2001:db8::ffff:ffff:ffff:ffff]:65535")
	if n := ConnName(1, x, y); !validName(n) || len(n) != 42 || n != ConnName(1, y, netip.MustParseAddrPort("[fe80::1]:80")) {
		t.Fatalf("IPv6 name %q", n)
	}
}

func TestConnOpenAttach(t *testing.T) {
	dir := testDir(t)
	a := mustOpen(t, connCfg(dir, testA, testB, 5000, 100))
	if a.Side() != 0 || a.PeerAttached() || a.PeerDead() {
		t.Fatalf("creator: side %d attached %v dead %v", a.Side(), a.PeerAttached(), a.PeerDead())
	}
	if f := dirFiles(t, dir); len(f) != 1 || f[0] != a.Name() {
		t.Fatalf("files %v", f)
	}
	b := mustOpen(t, connCfg(dir, testB, testA, 1<<20, 1<<20))
	if b.Side() != 1 || !b.PeerAttached() || !a.PeerAttached() || a.PeerPID() != os.Getpid() {
		t.Fatalf("attacher side %d, attached %v %v", b.Side(), b.PeerAttached(), a.PeerAttached())
	}
	if a.Token() == 0 || a.Token() != b.Token() {
		t.Fatalf("tokens %x %x", a.Token(), b.Token())
	}
	// The creator's sizes count: 5000 -> 8 KiB written by a, 100 -> 4 KiB read by a.
	if tx, rx := a.Capacities(); tx != 8192 || rx != 4096 {
		t.Fatalf("creator capacities %d %d", tx, rx)
	}
	if tx, rx := b.Capacities(); tx != 4096 || rx != 8192 {
		t.Fatalf("attacher capacities %d %d", tx, rx)
	}
	// The name is only a rendezvous: gone once side 1 is in.
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left after attach %v", f)
	}
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if b.PeerState()&StateClosed == 0 {
		t.Fatal("peer close not visible")
	}
}

func TestConnCreatorCloseRemovesName(t *testing.T) {
	dir := testDir(t)
	a := mustOpen(t, connCfg(dir, testA, testB, 0, 0))
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left %v", f)
	}
	if _, _, err := a.Write([][]byte{{1}}); err != ErrClosed {
		t.Fatalf("Write after Close: %v", err)
	}
	if _, _, err := a.Read([][]byte{make([]byte, 1)}); err != ErrClosed {
		t.Fatalf("Read after Close: %v", err)
	}
	if w, err := a.Close(); w || err != nil {
		t.Fatalf("second Close: %v %v", w, err)
	}
}

// TestConnStale: leftovers under the connection's name are replaced, never joined: a dead
// creator, a closed one, a taken side 1, another generation, garbage. A live segment of another
// connection (our own endpoint's) is left alone.
func TestConnStale(t *testing.T) {
	dir := testDir(t)
	name := ConnName(7, testA, testB)
	path := shmseg.Join(dir, name)
	deadPID := deadProcess(t)

	// A complete segment as b's peer would have made it, then spoiled.
	leftover := func(spoil func(mem []byte)) {
		t.Helper()
		mem, err := createSegment(path, connSize(MinStreamBytes, MinStreamBytes))
		if err != nil {
			t.Fatal(err)
		}
		pid, start, _ := selfIdentity()
		initConn(mem, MinStreamBytes, MinStreamBytes, connCfg(dir, testA, testB, 0, 0), 99, pid, start)
		spoil(mem)
		shmseg.Unmap(mem)
	}
	cases := map[string]func(mem []byte){
		"dead creator": func(mem []byte) {
			atomic.StoreUint64(word64(mem, sideOff(0)+sdTag), uint64(deadPID)<<32|tagReady)
		},
		"reused pid": func(mem []byte) { atomic.AddUint64(word64(mem, sideOff(0)+sdStart), 1) },
		"closed":     func(mem []byte) { atomic.StoreUint64(word64(mem, sideOff(0)+sdFlags), uint64(StateClosed)) },
		"joined":     func(mem []byte) { atomic.StoreUint64(word64(mem, sideOff(1)+sdTag), uint64(deadPID)<<32|1) },
		"generation": func(mem []byte) { atomic.StoreUint64(word64(mem, cnGen), 5) },
		"garbage":    func(mem []byte) { atomic.StoreUint64(word64(mem, cnCap1), 12345) },
		"no magic":   func(mem []byte) { atomic.StoreUint64(word64(mem, cnMagic), 0) },
	}
	for what, spoil := range cases {
		leftover(spoil)
		b, err := OpenConn(connCfg(dir, testB, testA, 0, 0))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if b.Side() != 0 || b.Token() == 99 {
			t.Fatalf("%s: joined the leftover (side %d)", what, b.Side())
		}
		b.Close()
		if f := dirFiles(t, dir); len(f) != 0 {
			t.Fatalf("%s: files left %v", what, f)
		}
	}

	// A live segment created by our own endpoint: busy, untouched.
	own := mustOpen(t, connCfg(dir, testB, testA, 0, 0))
	if _, err := OpenConn(connCfg(dir, testB, testA, 0, 0)); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("joined or removed a live segment of our own endpoint: %v", err)
	}
	if f := dirFiles(t, dir); len(f) != 1 {
		t.Fatalf("files %v", f)
	}
	own.Close()

	// Another user's file (faked: mode 0644) is not ours to judge.
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Fchmod(fd, 0o644)
	unix.Close(fd)
	if _, err := OpenConn(connCfg(dir, testB, testA, 0, 0)); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("foreign file: %v", err)
	}
	unix.Unlink(path)
}

// deadProcess returns the pid of a process that ran and was reaped.
func deadProcess(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestConnOpenRace: both ends open at the same time, many times: always one side 0 and one
// side 1 sharing a segment, never two creators.
func TestConnOpenRace(t *testing.T) {
	dir := testDir(t)
	for i := range 300 {
		la := netip.AddrPortFrom(testA.Addr(), uint16(20000+i))
		ch := make(chan *Conn)
		go func() {
			c, err := OpenConn(connCfg(dir, testB, la, 0, 0))
			if err != nil {
				t.Error(err)
			}
			ch <- c
		}()
		a, err := OpenConn(connCfg(dir, la, testB, 0, 0))
		b := <-ch
		if err != nil || b == nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if a.Side()+b.Side() != 1 || a.Token() != b.Token() {
			t.Fatalf("round %d: sides %d %d tokens %x %x", i, a.Side(), b.Side(), a.Token(), b.Token())
		}
		a.Close()
		b.Close()
	}
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left %v", f)
	}
}

func TestConnFullFS(t *testing.T) {
	// A tmpfs that cannot hold the segment: ErrNoSpace at creation. Needs mount rights.
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8k"); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	_, err := OpenConn(connCfg(dir, testA, testB, 1<<20, 1<<20))
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("OpenConn on a full file system: %v", err)
	}
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left %v", f)
	}
}

// TestSweepConns: names of dead creators and temporary files of dead processes go; a live
// creator's name waiting for its peer stays.
func TestSweepConns(t *testing.T) {
	dir := testDir(t)
	live := mustOpen(t, connCfg(dir, testA, testB, 0, 0))
	dead := deadProcess(t)
	mem, err := createSegment(shmseg.Join(dir, ConnName(7, netipPort(1), testB)), connSize(MinStreamBytes, MinStreamBytes))
	if err != nil {
		t.Fatal(err)
	}
	initConn(mem, MinStreamBytes, MinStreamBytes, connCfg(dir, netipPort(1), testB, 0, 0), 1, dead, 1)
	shmseg.Unmap(mem)
	tmp := shmseg.Join(dir, live.Name()+".new."+strconv.Itoa(dead)+".1")
	if fd, err := unix.Open(tmp, unix.O_CREAT|unix.O_RDWR, 0o600); err == nil {
		unix.Close(fd)
	}
	other := shmseg.Join(dir, "not-a-conn")
	if fd, err := unix.Open(other, unix.O_CREAT|unix.O_RDWR, 0o600); err == nil {
		unix.Close(fd)
	}
	if n := SweepConns(dir); n != 2 {
		t.Fatalf("SweepConns removed %d, files %v", n, dirFiles(t, dir))
	}
	if f := dirFiles(t, dir); len(f) != 2 || !slices.Contains(f, live.Name()) || !slices.Contains(f, "not-a-conn") {
		t.Fatalf("files %v", f)
	}
	unix.Unlink(other)
	b := mustOpen(t, connCfg(dir, testB, testA, 0, 0))
	if b.Side() != 1 {
		t.Fatal("the swept directory lost the live segment")
	}
}
