package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Acceptance tests of the shared-memory UDP transport (GOXIO_SHM=1): real programs
// (tests/shm/shmudp.c, tests/shm/shmsig.c, sockperf) under LD_PRELOAD exchange checked
// datagrams, and the statistics segment (goxio_stats --json) tells which path carried them.
// Every test runs with its own segment directory under /dev/shm and its own statistics
// directory, and checks at the end that the processes left no segment behind.

// shmHarness is one test's library, programs and directories.
type shmHarness struct {
	t        *testing.T
	lib      string
	udp, sig string // compiled tests/shm programs
	shmDir   string // GOXIO_SHM_DIR
	statsDir string // VMA_STATS_SHMEM_DIR
}

// newShmHarness compiles the test programs into a folder every user can read and creates the
// segment and statistics directories (both writable by every user, sticky, so a test can run
// a process as another user).
func newShmHarness(t *testing.T) *shmHarness {
	t.Helper()
	h := &shmHarness{t: t, lib: integrationLib(t)}
	work := t.TempDir()
	for p := work; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	src := filepath.Join(testutil.RepoRoot(), "tests", "shm")
	h.udp = filepath.Join(work, "shmudp")
	testutil.CompileC(t, filepath.Join(src, "shmudp.c"), h.udp, "-O2", "-Wall")
	h.sig = filepath.Join(work, "shmsig")
	testutil.CompileC(t, filepath.Join(src, "shmsig.c"), h.sig, "-O2", "-Wall")
	dir, err := os.MkdirTemp("/dev/shm", "goxio-test-")
	if err != nil {
		t.Fatalf("segment directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h.shmDir = dir
	h.statsDir = filepath.Join(work, "stats")
	for _, d := range []string{h.shmDir} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(h.statsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.statsDir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return h
}

// env is the environment of a program under the library with the shared-memory transport on.
func (h *shmHarness) env(extra ...string) []string {
	return testutil.Env(h.lib, append([]string{"GOXIO_SHM=1", "GOXIO_SHM_DIR=" + h.shmDir,
		"VMA_STATS_SHMEM_DIR=" + h.statsDir, "GOXIO_STATS_SHMEM_DIR=" + h.statsDir}, extra...)...)
}

// shmProc is a running test program: its stdin, its stdout lines as they come, all its output.
type shmProc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	out   testutil.SyncBuffer
	done  chan struct{}
	err   error
}

// start starts path with args in its own process group (as cred's user when not nil). The test's
// cleanup kills what is left of it and logs its output when the test failed.
func (h *shmHarness) start(name string, env []string, cred *syscall.Credential, path string, args ...string) *shmProc {
	t := h.t
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	p := &shmProc{t: t, name: name, cmd: cmd, lines: make(chan string, 100000), done: make(chan struct{})}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("output of %s (pid %d):\n%s", name, cmd.Process.Pid, testutil.Tail(p.out.String(), 6000))
		}
	})
	return p
}

func (p *shmProc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the program has ended.
func (p *shmProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// until returns the program's lines up to and including the first that starts with prefix,
// waiting at most timeout; it fails the test when the program ends or the time runs out first.
func (p *shmProc) until(prefix string, timeout time.Duration) []string {
	p.t.Helper()
	var got []string
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.done
				p.t.Fatalf("%s ended (%v) while the test waited for %q:\n%s", p.name, p.err, prefix,
					testutil.Tail(p.out.String(), 6000))
			}
			got = append(got, l)
			if strings.HasPrefix(l, prefix) {
				return got
			}
			if strings.HasPrefix(l, "FATAL") {
				p.t.Fatalf("%s: %s\n%s", p.name, l, testutil.Tail(p.out.String(), 6000))
			}
		case <-deadline:
			p.t.Fatalf("%s: no %q within %v:\n%s", p.name, prefix, timeout, testutil.Tail(p.out.String(), 6000))
		}
	}
}

// expect returns the first line starting with prefix.
func (p *shmProc) expect(prefix string, timeout time.Duration) string {
	p.t.Helper()
	l := p.until(prefix, timeout)
	return l[len(l)-1]
}

// say writes one line to the program's stdin.
func (p *shmProc) say(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("%s: write %q: %v\n%s", p.name, line, err, testutil.Tail(p.out.String(), 6000))
	}
}

// exit tells the program to exit and requires exit code 0 within timeout.
func (p *shmProc) exit(timeout time.Duration) {
	p.t.Helper()
	p.say("exit")
	p.wait(timeout)
}

// wait requires the program to end with exit code 0 within timeout.
func (p *shmProc) wait(timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v:\n%s", p.name, timeout, testutil.Tail(p.out.String(), 6000))
	}
	if p.err != nil {
		p.t.Fatalf("%s: %v\n%s", p.name, p.err, testutil.Tail(p.out.String(), 6000))
	}
}

// kill ends the program with SIGKILL and reaps it.
func (p *shmProc) kill() {
	p.t.Helper()
	syscall.Kill(p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("%s: not reaped 10 s after SIGKILL", p.name)
	}
}

// ready reads the program's "ready A B" line.
func (p *shmProc) ready() (a, b int) {
	p.t.Helper()
	l := p.expect("ready ", 30*time.Second)
	if _, err := fmt.Sscanf(l, "ready %d %d", &a, &b); err != nil {
		p.t.Fatalf("%s: bad ready line %q", p.name, l)
	}
	return a, b
}

// senderLine is one "sender" line of a receiver.
type senderLine struct{ got, first, last, gaps, reorder int }

// rxSummary is what a receiver reported.
type rxSummary struct {
	total, bad, reorder, badsrc, gaps, idle int
	senders                                 map[int]senderLine
	text                                    string
}

var (
	senderRe  = regexp.MustCompile(`^sender (\d+) got (\d+) first (\d+) last (\d+) gaps (\d+) reorder (\d+)$`)
	summaryRe = regexp.MustCompile(`^summary total (\d+) bad (\d+) reorder (\d+) badsrc (\d+) gaps (\d+) idle (\d+)$`)
	reportRe  = regexp.MustCompile(`^report-end total (\d+) bad (\d+)$`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// parseSenders reads the sender lines among lines.
func parseSenders(lines []string) map[int]senderLine {
	m := map[int]senderLine{}
	for _, l := range lines {
		if s := senderRe.FindStringSubmatch(l); s != nil {
			m[atoi(s[1])] = senderLine{atoi(s[2]), atoi(s[3]), atoi(s[4]), atoi(s[5]), atoi(s[6])}
		}
	}
	return m
}

// summary waits for the receiver's summary.
func (p *shmProc) summary(timeout time.Duration) rxSummary {
	p.t.Helper()
	lines := p.until("summary ", timeout)
	m := summaryRe.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		p.t.Fatalf("%s: bad summary %q", p.name, lines[len(lines)-1])
	}
	return rxSummary{total: atoi(m[1]), bad: atoi(m[2]), reorder: atoi(m[3]), badsrc: atoi(m[4]), gaps: atoi(m[5]),
		idle: atoi(m[6]), senders: parseSenders(lines), text: strings.Join(lines, "\n")}
}

// report asks a receiver for its per-sender counts now.
func (p *shmProc) report() (map[int]senderLine, int) {
	p.t.Helper()
	p.say("report")
	lines := p.until("report-end ", 30*time.Second)
	m := reportRe.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		p.t.Fatalf("%s: bad report end %q", p.name, lines[len(lines)-1])
	}
	return parseSenders(lines), atoi(m[2])
}

// sent parses a sender's "sent OK eagain E" line.
func (p *shmProc) sent(timeout time.Duration) (ok, eagain int) {
	p.t.Helper()
	l := p.expect("sent ", timeout)
	if _, err := fmt.Sscanf(l, "sent %d eagain %d", &ok, &eagain); err != nil {
		p.t.Fatalf("%s: bad sent line %q", p.name, l)
	}
	return ok, eagain
}

// requireIntact fails the test unless the receiver saw no damaged, misattributed or reordered
// datagram.
func requireIntact(t *testing.T, who string, s rxSummary) {
	t.Helper()
	if s.bad != 0 || s.badsrc != 0 || s.reorder != 0 {
		t.Errorf("%s: %d damaged, %d with a wrong source address, %d out of order:\n%s", who, s.bad, s.badsrc,
			s.reorder, s.text)
	}
}

// datagramBytes is the length shmudp gives datagram seq of sender (no -l).
func datagramBytes(sender, seq int) uint64 {
	return uint64(32 + (uint32(seq)*7919+uint32(sender)*31)%1201)
}

// acksFor is how many acknowledgements a window of w gets for count datagrams.
func acksFor(count, w int) uint64 {
	n := uint64(0)
	for seq := 0; seq < count; seq++ {
		if seq%w == w-1 || seq == count-1 {
			n++
		}
	}
	return n
}

// stats reads one process's statistics now.
func (h *shmHarness) stats(pid int) statsDoc {
	h.t.Helper()
	res := runStatsTool(h.t, "-k", h.statsDir, "-p", strconv.Itoa(pid), "-c", "1", "--json")
	if res.code != 0 {
		h.t.Fatalf("goxio_stats --json: exit %d\n%s", res.code, res.stderr)
	}
	docs := parseStatsDocs(h.t, res.stdout)
	if len(docs) == 0 {
		h.t.Fatalf("goxio_stats --json printed nothing")
	}
	return docs[0]
}

// socketStats returns one socket's statistics.
func (h *shmHarness) socketStats(p *shmProc, fd int) stats.SocketSnapshot {
	h.t.Helper()
	return socketOf(h.t, h.stats(p.pid()), p.pid(), fd)
}

// processSockets returns the UDP sockets of a process in d.
func processSockets(d statsDoc, pid int) []stats.SocketSnapshot {
	var out []stats.SocketSnapshot
	for _, p := range d.Processes {
		if p.Process.Pid != pid {
			continue
		}
		for _, s := range p.Sockets {
			if s.Proto() == "udp" {
				out = append(out, s)
			}
		}
	}
	return out
}

// discoveryFile matches the per-user files that outlive processes: per namespace, the discovery
// directory and the TCP pairing table; per machine, the held-wait table (offload/internal/wait).
var discoveryFile = regexp.MustCompile(`^goxio\.\d+\.(\d+\.(dir|pairs\d+)|held\d+)$`)

// segments lists the files of the segment directory other than discovery files.
func (h *shmHarness) segments() []string {
	h.t.Helper()
	ents, err := os.ReadDir(h.shmDir)
	if err != nil {
		h.t.Fatalf("read %s: %v", h.shmDir, err)
	}
	var out []string
	for _, e := range ents {
		if !discoveryFile.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// requireClean fails the test unless the segment directory holds discovery files only (every
// goxio process of the test has ended).
func (h *shmHarness) requireClean() {
	h.t.Helper()
	if segs := h.segments(); len(segs) > 0 {
		h.t.Errorf("segments left in %s after every process ended: %v", h.shmDir, segs)
	}
}

// segmentsOf lists the segments that belong to pid: its inboxes (goxio.<uid>.in.<pid>.<n>...)
// and its rings (<inbox>.<pid>.<n>).
func (h *shmHarness) segmentsOf(pid int) []string {
	re := regexp.MustCompile(`^goxio\.\d+\.in\.(` + strconv.Itoa(pid) + `\.\d+(\.\d+\.\d+)?|\d+\.\d+\.` +
		strconv.Itoa(pid) + `\.\d+)$`)
	var out []string
	for _, s := range h.segments() {
		if re.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// sweep starts one short goxio process (which sweeps the segments of dead processes at start)
// and waits up to 5 s for pid's segments to disappear.
func (h *shmHarness) requireSwept(pid int, what string) {
	h.t.Helper()
	if len(h.segmentsOf(pid)) == 0 {
		h.t.Logf("no segment of the killed %s (pid %d) left before the sweep", what, pid)
	}
	res := testutil.RunProgram(h.env(), 30*time.Second, h.udp, "noop")
	if res.ExitCode != 0 {
		h.t.Fatalf("shmudp noop: %s\n%s%s", res, res.Stdout, res.Stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := h.segmentsOf(pid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Errorf("segments of the killed %s (pid %d) still there 5 s after a new goxio process started: %v (all: %v)",
				what, pid, left, h.segments())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireShm fails the test unless the socket is on the shm transport and received want
// datagrams (wantBytes bytes, when not zero) through the rings and none through the kernel.
func requireShm(t *testing.T, who string, s stats.SocketSnapshot, want, wantBytes uint64) {
	t.Helper()
	requireShmOS(t, who, s, want, wantBytes, 0)
}

// requireShmOS is requireShm for a socket that received os datagrams through the kernel.
func requireShmOS(t *testing.T, who string, s stats.SocketSnapshot, want, wantBytes, os uint64) {
	t.Helper()
	c := s.Counters
	if s.Transport != stats.TransportSHM || c.RxPackets != want || c.RxOSPackets != os ||
		(wantBytes != 0 && c.RxBytes != wantBytes) {
		t.Errorf("%s: transport %s (reason %s), rx offloaded %d (%d bytes), rx os %d; want shm, %d offloaded (%d bytes), %d os\n%+v",
			who, s.Transport, s.Reason, c.RxPackets, c.RxBytes, c.RxOSPackets, want, wantBytes, os, c)
	}
}

// earlyUDP is how many datagrams a new unconnected UDP socket sends with sendto through the
// kernel in its early phase before the engine takes it over (shim/preload/early.c:
// GOXIO_EARLY_UDP_CALLS - 1): the receiver reads them from its kernel socket, before the ring's.
const earlyUDP = 2

// ringNamed returns the one ring slot of the process whose name starts with prefix and ends with
// suffix.
func ringNamed(t *testing.T, d statsDoc, prefix, suffix string) stats.RingSnapshot {
	t.Helper()
	var found []stats.RingSnapshot
	for _, p := range d.Processes {
		for _, r := range p.Rings {
			if strings.HasPrefix(r.Name, prefix) && strings.HasSuffix(r.Name, suffix) {
				found = append(found, r)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("ring slots named %q...%q: %+v", prefix, suffix, found)
	}
	return found[0]
}

// TestShmUnicast: N checked datagrams from one process to another arrive intact, in order, with
// the sender's address (the receiver's acknowledgements to it arrive), through the rings.
func TestShmUnicast(t *testing.T) {
	for _, variant := range []struct{ name, flag string }{{"sendto", ""}, {"connected", "-c"}} {
		t.Run(variant.name, func(t *testing.T) {
			h := newShmHarness(t)
			const n, w = 5000, 32
			rx := h.start("receiver", h.env(), nil, h.udp, "rx", "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-W")
			port, rfd := rx.ready()
			args := []string{"tx", "-p", strconv.Itoa(port), "-s", "1", "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-W"}
			if variant.flag != "" {
				args = append(args, variant.flag)
			}
			tx := h.start("sender", h.env(), nil, h.udp, args...)
			_, tfd := tx.ready()
			if ok, eagain := tx.sent(60 * time.Second); ok != n || eagain != 0 {
				t.Errorf("sender: sent %d eagain %d, want %d 0", ok, eagain, n)
			}
			s := rx.summary(60 * time.Second)
			requireIntact(t, "receiver", s)
			if got := s.senders[1]; s.total != n || got.got != n || got.first != 0 || got.last != n-1 || got.gaps != 0 {
				t.Errorf("receiver: total %d, sender 1 %+v; want %d datagrams 0..%d\n%s", s.total, got, n, n-1, s.text)
			}
			// The sendto variant's first earlyUDP datagrams go through the kernel (its early
			// phase); a connected socket's all go through the rings.
			early := uint64(earlyUDP)
			if variant.flag != "" {
				early = 0
			}
			var bytes uint64
			for seq := range n {
				if uint64(seq) >= early {
					bytes += datagramBytes(1, seq)
				}
			}
			requireShmOS(t, "receiving socket", h.socketStats(rx, rfd), n-early, bytes, early)
			ts := h.socketStats(tx, tfd)
			if c := ts.Counters; c.TxPackets != n-early || c.TxOSPackets != early || c.TxBytes != bytes {
				t.Errorf("sending socket: tx offloaded %d (%d bytes), tx os %d; want %d (%d bytes), %d\n%+v",
					c.TxPackets, c.TxBytes, c.TxOSPackets, n-early, bytes, early, c)
			}
			requireShm(t, "sending socket (acknowledgements)", ts, acksFor(n, w), 8*acksFor(n, w))
			// The rings themselves: the receiver's inbox took n datagrams (bytes bytes), the
			// sender's outlet put n there; both slots name the receiver's inbox.
			rr := ringNamed(t, h.stats(rx.pid()), "rx ", fmt.Sprintf(" fd %d", rfd))
			tr := ringNamed(t, h.stats(tx.pid()), "tx "+strings.Fields(rr.Name)[1], "")
			if rr.RxPackets != n-early || rr.RxBytes != bytes || tr.TxPackets != n-early || tr.TxBytes != bytes || tr.TxDrops != 0 {
				t.Errorf("rings: receiver %+v, sender %+v; want %d datagrams (%d bytes) each way, no drops", rr, tr, n-early, bytes)
			}
			// The receiver sums its senders' wake-ups now and then: never more than they sent.
			if rr.WakeSent > tr.WakeSent {
				t.Errorf("wake-ups: the receiver's ring shows %d sent, the sender's only %d", rr.WakeSent, tr.WakeSent)
			}
			tx.exit(30 * time.Second)
			rx.exit(30 * time.Second)
			h.requireClean()
		})
	}
}

// TestShmSameProcess: one socket sends to another socket of the same process and gets answers.
func TestShmSameProcess(t *testing.T) {
	h := newShmHarness(t)
	const n = 2000
	p := h.start("self", h.env(), nil, h.udp, "self", "-n", strconv.Itoa(n), "-W")
	fa, fb := p.ready()
	if l := p.expect("self ", 60*time.Second); l != fmt.Sprintf("self ok %d bad 0", n) {
		t.Errorf("same process: %q, want %d exchanges, none bad", l, n)
	}
	var bytes uint64
	for seq := range n {
		bytes += datagramBytes(7, seq)
	}
	d := h.stats(p.pid())
	requireShm(t, "receiving socket B", socketOf(t, d, p.pid(), fb), n, bytes)
	requireShm(t, "answered socket A", socketOf(t, d, p.pid(), fa), n, 8*n)
	p.exit(30 * time.Second)
	h.requireClean()
}

// TestShmManySenders: 8 processes send to one receiver at once; every datagram arrives intact,
// each sender's in order.
func TestShmManySenders(t *testing.T) {
	h := newShmHarness(t)
	const senders, n, w = 8, 3000, 32
	rx := h.start("receiver", h.env(), nil, h.udp, "rx", "-n", strconv.Itoa(senders*n), "-a", strconv.Itoa(w), "-W")
	port, rfd := rx.ready()
	var txs []*shmProc
	for i := range senders {
		txs = append(txs, h.start(fmt.Sprintf("sender %d", i), h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port),
			"-s", strconv.Itoa(i), "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-W"))
	}
	for i, tx := range txs {
		if ok, eagain := tx.sent(120 * time.Second); ok != n || eagain != 0 {
			t.Errorf("sender %d: sent %d eagain %d, want %d 0", i, ok, eagain, n)
		}
	}
	s := rx.summary(60 * time.Second)
	requireIntact(t, "receiver", s)
	if s.total != senders*n || s.gaps != 0 {
		t.Errorf("receiver: %d datagrams, %d missing; want %d, 0\n%s", s.total, s.gaps, senders*n, s.text)
	}
	for i := range senders {
		if got := s.senders[i]; got.got != n || got.first != 0 || got.last != n-1 {
			t.Errorf("sender %d: receiver saw %+v, want %d datagrams 0..%d", i, got, n, n-1)
		}
	}
	requireShmOS(t, "receiving socket", h.socketStats(rx, rfd), senders*(n-earlyUDP), 0, senders*earlyUDP)
	for _, tx := range txs {
		tx.exit(30 * time.Second)
	}
	rx.exit(30 * time.Second)
	h.requireClean()
}

// waitSenders asks the receiver for reports until each of ids has at least min datagrams.
func waitSenders(t *testing.T, rx *shmProc, min int, timeout time.Duration, ids ...int) map[int]senderLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rep, _ := rx.report()
		enough := true
		for _, id := range ids {
			if rep[id].got < min {
				enough = false
			}
		}
		if enough {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver: fewer than %d datagrams from each of senders %v after %v: %+v", min, ids, timeout, rep)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShmKillSender: of two senders to one receiver, one (sending as fast as it can) is killed
// with SIGKILL mid-stream; the receiver and the other sender carry on, nothing arrives damaged,
// and the killed sender's rings are removed once a new goxio process has started.
func TestShmKillSender(t *testing.T) {
	h := newShmHarness(t)
	rx := h.start("receiver", h.env(), nil, h.udp, "rx", "-i", "20000", "-W")
	port, _ := rx.ready()
	fast := h.start("fast sender", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-s", "1", "-T", "60000", "-W")
	paced := h.start("paced sender", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-s", "2", "-T", "60000",
		"-u", "1000", "-W")
	fast.ready()
	paced.ready()
	waitSenders(t, rx, 200, 20*time.Second, 1, 2)
	fast.kill()
	time.Sleep(300 * time.Millisecond)
	r1, bad1 := rx.report()
	time.Sleep(time.Second)
	r2, bad2 := rx.report()
	if r2[2].got-r1[2].got < 100 {
		t.Errorf("paced sender: %d datagrams received in the second after the other sender was killed, want >= 100 (%+v -> %+v)",
			r2[2].got-r1[2].got, r1[2], r2[2])
	}
	if r2[1].got != r1[1].got {
		t.Errorf("killed sender: still %d -> %d datagrams 0.3 s after SIGKILL", r1[1].got, r2[1].got)
	}
	if bad1+bad2 != 0 {
		t.Errorf("receiver counted damaged datagrams: %d", bad1+bad2)
	}
	h.requireSwept(fast.pid(), "sender")
	paced.say("exit")
	if ok, _ := paced.sent(30 * time.Second); ok == 0 {
		t.Errorf("paced sender sent nothing")
	}
	paced.wait(30 * time.Second)
	rx.say("exit")
	s := rx.summary(30 * time.Second)
	rx.wait(30 * time.Second)
	requireIntact(t, "receiver", s)
	// Losses of the paced sender are not asserted: under a flood the kernel drops any sender's
	// datagrams too (one receive buffer); they show how fairly the receiver serves its rings.
	t.Logf("fast sender: %+v, paced sender: %+v", s.senders[1], s.senders[2])
	h.requireClean()
}

// TestShmKillReceiver: a receiver is killed with SIGKILL mid-stream; the sender does not hang
// or fail, a new receiver on the same port gets its datagrams intact, and the killed receiver's
// segments are removed.
func TestShmKillReceiver(t *testing.T) {
	h := newShmHarness(t)
	rx1 := h.start("first receiver", h.env(), nil, h.udp, "rx", "-i", "20000", "-W")
	port, _ := rx1.ready()
	tx := h.start("sender", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-s", "1", "-T", "60000", "-u", "500", "-W")
	_, tfd := tx.ready()
	waitSenders(t, rx1, 200, 20*time.Second, 1)
	rx1.kill()
	time.Sleep(500 * time.Millisecond)
	if tx.exited() {
		t.Fatalf("the sender ended after its receiver was killed: %v\n%s", tx.err, tx.out.String())
	}
	rx2 := h.start("second receiver", h.env(), nil, h.udp, "rx", "-p", strconv.Itoa(port), "-i", "20000", "-W")
	if p2, _ := rx2.ready(); p2 != port {
		t.Fatalf("second receiver bound port %d, want %d", p2, port)
	}
	start := time.Now()
	rep := waitSenders(t, rx2, 200, 20*time.Second, 1)
	t.Logf("second receiver: %d datagrams from the sender %v after it started (%+v)", rep[1].got,
		time.Since(start).Round(time.Millisecond), rep[1])
	h.requireSwept(rx1.pid(), "receiver")
	st := h.socketStats(tx, tfd)
	tx.say("exit")
	if ok, eagain := tx.sent(30 * time.Second); ok == 0 || eagain != 0 {
		t.Errorf("sender: sent %d eagain %d", ok, eagain)
	}
	tx.wait(30 * time.Second)
	rx2.say("exit")
	s := rx2.summary(30 * time.Second)
	rx2.wait(30 * time.Second)
	if s.bad != 0 || s.badsrc != 0 {
		t.Errorf("second receiver: %d damaged, %d with a wrong source:\n%s", s.bad, s.badsrc, s.text)
	}
	t.Logf("second receiver: %+v, %d reordered; sender's socket: tx offloaded %d, tx os %d, drops %d",
		s.senders[1], s.reorder, st.Counters.TxPackets, st.Counters.TxOSPackets, st.Counters.TxDrops)
	h.requireClean()
}

// TestShmOverflow: a receiver that does not read while a sender sends far more than its ring
// holds. Blocking: every send succeeds, the surplus is dropped and counted. Non-blocking with
// VMA_TX_NONBLOCKED_EAGAINS=1: the surplus gets EAGAIN and nothing accepted is lost. Either way
// the datagrams read later are intact.
func TestShmOverflow(t *testing.T) {
	for _, nonblock := range []bool{false, true} {
		name := "blocking"
		if nonblock {
			name = "nonblocking-eagain"
		}
		t.Run(name, func(t *testing.T) {
			h := newShmHarness(t)
			const n = 20000
			rx := h.start("receiver", h.env(), nil, h.udp, "rx", "-g", "-W")
			port, rfd := rx.ready()
			args := []string{"tx", "-p", strconv.Itoa(port), "-s", "1", "-n", strconv.Itoa(n), "-l", "1000", "-W"}
			env := h.env()
			if nonblock {
				args = append(args, "-N")
				env = h.env("VMA_TX_NONBLOCKED_EAGAINS=1")
			}
			tx := h.start("sender", env, nil, h.udp, args...)
			_, tfd := tx.ready()
			ok, eagain := tx.sent(60 * time.Second)
			rx.say("go")
			s := rx.summary(60 * time.Second)
			requireIntact(t, "receiver", s)
			rs, ts := h.socketStats(rx, rfd), h.socketStats(tx, tfd)
			drops := ts.Counters.TxDrops + rs.Counters.RxDropPackets
			t.Logf("sent %d, eagain %d, received %d, drops counted %d (sender tx_drops %d, receiver rx_drop_packets %d)",
				ok, eagain, s.total, drops, ts.Counters.TxDrops, rs.Counters.RxDropPackets)
			if s.total == 0 || s.total >= n {
				t.Errorf("receiver got %d datagrams of %d: the ring did not overflow, or kept nothing", s.total, n)
			}
			// The sender's first earlyUDP datagrams went through the kernel (its early phase).
			requireShmOS(t, "receiving socket", rs, uint64(s.total-earlyUDP), 1000*uint64(s.total-earlyUDP), earlyUDP)
			if ts.Counters.TxOSPackets != earlyUDP {
				t.Errorf("sender stats: tx os %d, want %d (its early phase)\n%+v", ts.Counters.TxOSPackets, earlyUDP, ts.Counters)
			}
			if nonblock {
				if eagain == 0 || ok+eagain != n || s.total != ok {
					t.Errorf("non-blocking: %d sent, %d EAGAIN, %d received; want EAGAIN > 0, sent+EAGAIN = %d, received = sent",
						ok, eagain, s.total, n)
				}
				if ts.Counters.TxEAGAIN != uint64(eagain) || ts.Counters.TxPackets != uint64(ok-earlyUDP) || drops != 0 {
					t.Errorf("non-blocking sender stats: tx %d, tx_eagain %d, drops %d; want %d, %d, 0\n%+v",
						ts.Counters.TxPackets, ts.Counters.TxEAGAIN, drops, ok-earlyUDP, eagain, ts.Counters)
				}
			} else {
				if ok != n || eagain != 0 {
					t.Errorf("blocking: sent %d eagain %d, want %d 0", ok, eagain, n)
				}
				if ts.Counters.TxPackets != n-earlyUDP {
					t.Errorf("sender stats: tx offloaded %d, want %d\n%+v", ts.Counters.TxPackets, n-earlyUDP, ts.Counters)
				}
				if drops != uint64(n-s.total) {
					t.Errorf("drops counted %d (sender tx_drops %d + receiver rx_drop_packets %d), want %d (sent %d - received %d)",
						drops, ts.Counters.TxDrops, rs.Counters.RxDropPackets, n-s.total, n, s.total)
				}
				// The sender's ring slot counts the same drops, and the receiver's slot shows
				// what its senders dropped (summed now and then: at most that many).
				rr := ringNamed(t, h.stats(rx.pid()), "rx ", fmt.Sprintf(" fd %d", rfd))
				tr := ringNamed(t, h.stats(tx.pid()), "tx "+strings.Fields(rr.Name)[1], "")
				if tr.TxDrops != ts.Counters.TxDrops || rr.RxDrops > tr.TxDrops || tr.TxPackets+tr.TxDrops != n-earlyUDP {
					t.Errorf("ring slots: sender %+v, receiver %+v; want the sender's %d drops, %d sent in all", tr, rr,
						ts.Counters.TxDrops, n-earlyUDP)
				}
			}
			tx.exit(30 * time.Second)
			rx.exit(30 * time.Second)
			h.requireClean()
		})
	}
}

// TestShmOtherUser: a receiver running as nobody, a sender as root: the transport pairs only
// processes of one user, so the datagrams go through the kernel, intact.
func TestShmOtherUser(t *testing.T) {
	h := newShmHarness(t)
	const n, w = 2000, 32
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	rx := h.start("receiver (nobody)", h.env(), nobody, h.udp, "rx", "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-W")
	port, rfd := rx.ready()
	tx := h.start("sender (root)", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-s", "1", "-n", strconv.Itoa(n),
		"-a", strconv.Itoa(w), "-W")
	_, tfd := tx.ready()
	if ok, eagain := tx.sent(60 * time.Second); ok != n || eagain != 0 {
		t.Errorf("sender: sent %d eagain %d, want %d 0", ok, eagain, n)
	}
	s := rx.summary(60 * time.Second)
	requireIntact(t, "receiver", s)
	if s.total != n || s.gaps != 0 {
		t.Errorf("receiver: %d datagrams, %d missing, want %d, 0\n%s", s.total, s.gaps, n, s.text)
	}
	rs, ts := h.socketStats(rx, rfd), h.socketStats(tx, tfd)
	if c := rs.Counters; c.RxOSPackets != n || c.RxPackets != 0 {
		t.Errorf("receiver (nobody): rx os %d, rx offloaded %d; want %d, 0 (%s)\n%+v", c.RxOSPackets, c.RxPackets, n,
			rs.Transport, c)
	}
	if c := ts.Counters; c.TxOSPackets != n || c.TxPackets != 0 {
		t.Errorf("sender (root): tx os %d, tx offloaded %d; want %d, 0 (%s)\n%+v", c.TxOSPackets, c.TxPackets, n,
			ts.Transport, c)
	}
	tx.exit(30 * time.Second)
	rx.exit(30 * time.Second)
	h.requireClean()
}

// TestShmMulticast: two subscriber processes under the library and one without it join a group
// on the loopback interface; a sender under the library sends to the group. Every subscriber gets
// every datagram exactly once, intact; the library's subscribers get them through rings (their
// kernel sockets' loopback copies are recognised and dropped), the plain one through the kernel.
// With a sender without the library, everybody gets the datagrams through the kernel, once.
func TestShmMulticast(t *testing.T) {
	t.Run("goxio sender", func(t *testing.T) { testShmMulticast(t, true) })
	t.Run("plain sender", func(t *testing.T) { testShmMulticast(t, false) })
}

func testShmMulticast(t *testing.T, goxioSender bool) {
	h := newShmHarness(t)
	const n, w = 1000, 16
	port := testutil.FreePort(t, "udp")
	group := "239.255.77.1"
	var rxs []*shmProc
	var fds []int
	for i := range 3 {
		env, name := h.env(), fmt.Sprintf("subscriber %d", i)
		if i == 2 {
			env, name = os.Environ(), "subscriber 2 (without the library)"
		}
		rx := h.start(name, env, nil, h.udp, "rx", "-p", strconv.Itoa(port), "-m", group,
			"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-i", "5000", "-W")
		_, fd := rx.ready()
		rxs, fds = append(rxs, rx), append(fds, fd)
	}
	// Each subscriber acknowledges every window, so no receive buffer overflows.
	txEnv := h.env()
	if !goxioSender {
		txEnv = os.Environ()
	}
	tx := h.start("sender", txEnv, nil, h.udp, "tx", "-p", strconv.Itoa(port), "-d", group, "-m", "-s", "1",
		"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-A", "3", "-W")
	_, tfd := tx.ready()
	if ok, _ := tx.sent(60 * time.Second); ok != n {
		t.Errorf("sender: sent %d, want %d", ok, n)
	}
	sums := make([]rxSummary, len(rxs))
	for i, rx := range rxs {
		sums[i] = rx.summary(60 * time.Second)
	}
	for i, s := range sums {
		requireIntact(t, fmt.Sprintf("subscriber %d", i), s)
		if s.total != n || s.gaps != 0 || s.idle != 0 || s.senders[1].got != n {
			t.Errorf("subscriber %d: %d datagrams, %d missing; want each of %d exactly once\n%s", i, s.total, s.gaps, n, s.text)
		}
		if i == 2 {
			continue
		}
		ss := h.socketStats(rxs[i], fds[i])
		c := ss.Counters
		wantRing, wantOS := uint64(n), uint64(0)
		if !goxioSender {
			wantRing, wantOS = 0, n
		}
		if ss.Transport != stats.TransportSHM || c.RxPackets != wantRing || c.RxOSPackets != wantOS {
			t.Errorf("subscriber %d socket: transport %s (%s), rx through rings %d, through the kernel %d; want shm, %d, %d",
				i, ss.Transport, ss.Reason, c.RxPackets, c.RxOSPackets, wantRing, wantOS)
		}
	}
	if goxioSender {
		ts := h.socketStats(tx, tfd)
		if c := ts.Counters; ts.Transport != stats.TransportSHM || c.TxOSPackets != n {
			t.Errorf("sender socket: transport %s (%s), tx through the kernel %d, want shm, %d (every datagram also goes to the kernel)",
				ts.Transport, ts.Reason, c.TxOSPackets, n)
		}
	}
	tx.exit(30 * time.Second)
	for _, rx := range rxs {
		rx.exit(30 * time.Second)
	}
	h.requireClean()
}

// TestShmEarlyReceive: a thread blocked in recv before its socket had a port (or a rule decision)
// gets the datagrams another socket of the process sends once the socket is bound: the blocked
// receive moves to the rings instead of staying asleep in the kernel, where ring datagrams never
// arrive (sockperf's client blocks its receiving thread that way).
func TestShmEarlyReceive(t *testing.T) {
	h := newShmHarness(t)
	const n = 1000
	p := h.start("early", h.env(), nil, h.udp, "early", "-n", strconv.Itoa(n))
	p.ready()
	if l := p.expect("early ", 60*time.Second); l != fmt.Sprintf("early got %d bad 0", n) {
		t.Errorf("early receive: %q, want every one of %d datagrams", l, n)
	}
	p.wait(30 * time.Second)
	h.requireClean()
}

// TestShmForkSpill: datagrams that came through a ring and wait in the socket when the process
// forks are received once each, in order, by the child (which never enters the library's Go
// code) or by the parent, as from the kernel socket they share; the socket then stays on the
// kernel (the child cannot read rings).
func TestShmForkSpill(t *testing.T) {
	h := newShmHarness(t)
	const n = 200
	p := h.start("forkspill", h.env(), nil, h.udp, "forkspill", "-n", strconv.Itoa(n))
	fr, _ := p.ready()
	if l := p.expect("child ", 30*time.Second); l != fmt.Sprintf("child got %d bad 0", n/2) {
		t.Errorf("child: %q, want the first %d datagrams", l, n/2)
	}
	if l := p.expect("parent ", 30*time.Second); l != fmt.Sprintf("parent got %d bad 0 extra 0", n-n/2) {
		t.Errorf("parent: %q, want the other %d datagrams, no more", l, n-n/2)
	}
	_ = fr
	p.wait(30 * time.Second)
	h.requireClean()
}

// TestShmMulticastSameProcess: two member sockets of one process each get every datagram a third
// socket of the process sends to the group exactly once, through rings.
func TestShmMulticastSameProcess(t *testing.T) {
	h := newShmHarness(t)
	const n = 2000
	p := h.start("mself", h.env(), nil, h.udp, "mself", "-n", strconv.Itoa(n), "-W")
	fb, fc := p.ready()
	if l := p.expect("mself ", 60*time.Second); l != fmt.Sprintf("mself ok %d bad 0 extra 0", n) {
		t.Errorf("same process multicast: %q, want %d datagrams to each member, none bad, none twice", l, n)
	}
	var bytes uint64
	for seq := range n {
		bytes += datagramBytes(9, seq)
	}
	d := h.stats(p.pid())
	requireShm(t, "member B", socketOf(t, d, p.pid(), fb), n, bytes)
	requireShm(t, "member C", socketOf(t, d, p.pid(), fc), n, bytes)
	p.exit(30 * time.Second)
	h.requireClean()
}

var (
	sockperfReceived = regexp.MustCompile(`ReceivedMessages=(\d+)`)
)

// runShmSockperf runs a sockperf server and a ping-pong client under the library with the
// transport on and checks the result; it returns the average latency.
func runShmSockperf(t *testing.T, h *shmHarness, srvArgs, cliArgs []string) string {
	t.Helper()
	sockperf := testutil.Program(t, "sockperf", "sockperf")
	srv := testutil.Start(t, "sockperf server", h.env(), sockperf, append([]string{"sr"}, srvArgs...)...)
	return runShmSockperfClient(t, h, sockperf, srv, cliArgs)
}

func runShmSockperfClient(t *testing.T, h *shmHarness, sockperf string, srv *testutil.Proc, cliArgs []string) string {
	t.Helper()
	// The server is up when its socket answers: give it a moment, bounded by the client's own
	// retries (sockperf pp fails without answers).
	time.Sleep(500 * time.Millisecond)
	if srv.Exited() {
		t.Fatalf("sockperf server ended at start:\n%s", testutil.Tail(srv.Output(), 3000))
	}
	// Paced at 1 M round trips/s: with --mps=max sockperf sizes its sample array for at most that
	// many per second and aborts ("_seqN > m_maxSequenceNo") when the rings answer faster.
	res := runClient(t, h.env(), 60*time.Second, sockperf, append([]string{"pp", "-t", "3", "--mps", "1000000"}, cliArgs...)...)
	out := string(res.Stdout) + string(res.Stderr)
	checkNoSockperfError(t, "client", out)
	avg := sockperfAvg.FindStringSubmatch(out)
	recv := sockperfReceived.FindStringSubmatch(out)
	if avg == nil || recv == nil {
		t.Fatalf("no latency summary or received count in the client's output:\n%s", testutil.Tail(out, 3000))
	}
	if n, _ := strconv.Atoi(recv[1]); n <= 0 {
		t.Fatalf("client received %s messages:\n%s", recv[1], testutil.Tail(out, 3000))
	}
	if v, err := strconv.ParseFloat(avg[1], 64); err != nil || v <= 0 {
		t.Fatalf("client average latency %q:\n%s", avg[1], testutil.Tail(out, 3000))
	}
	if srv.Exited() {
		t.Fatalf("sockperf server ended during the run:\n%s", testutil.Tail(srv.Output(), 3000))
	}
	checkNoSockperfError(t, "server", srv.Output())
	// The server's sockets took the client's messages from the rings.
	var offloaded, os uint64
	for _, s := range processSockets(h.stats(srv.Cmd.Process.Pid), srv.Cmd.Process.Pid) {
		offloaded += s.Counters.RxPackets
		os += s.Counters.RxOSPackets
	}
	if offloaded == 0 {
		t.Errorf("sockperf server: no datagram received through the rings (rx os %d)", os)
	}
	t.Logf("avg latency %s usec, %s messages; server rx offloaded %d, os %d", avg[1], recv[1], offloaded, os)
	return avg[1]
}

// TestShmSockperf: sockperf ping-pong under the library with the transport on, the server using
// each multiplexer, then a client with three sockets (-f) using each multiplexer.
func TestShmSockperf(t *testing.T) {
	for _, mux := range []string{"epoll", "poll", "select", "recvfrom"} {
		t.Run("server-"+mux, func(t *testing.T) {
			h := newShmHarness(t)
			port := testutil.FreePort(t, "udp")
			// sockperf takes -F only with a feed file (-f): the server's has one socket.
			file := filepath.Join(t.TempDir(), "feed.txt")
			writeFile(t, file, []byte(fmt.Sprintf("U:127.0.0.1:%d\n", port)), 0o644)
			runShmSockperf(t, h, []string{"-f", file, "-F", mux}, []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)})
		})
	}
	for _, mux := range []string{"epoll", "poll", "select"} {
		t.Run("multi-socket-"+mux, func(t *testing.T) {
			h := newShmHarness(t)
			var lines []string
			for range 3 {
				lines = append(lines, fmt.Sprintf("U:127.0.0.1:%d", testutil.FreePort(t, "udp")))
			}
			file := filepath.Join(t.TempDir(), "feed.txt")
			writeFile(t, file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			runShmSockperf(t, h, []string{"-f", file, "-F", mux}, []string{"-f", file, "-F", mux})
		})
	}
}

// TestShmSignals: blocking waits on a ring socket end as the kernel ends them: EINTR from a
// handler without SA_RESTART, a restarted recvfrom with SA_RESTART, EAGAIN at SO_RCVTIMEO, 0 at
// the timeouts of poll, epoll_wait and select. The program checks itself without the library
// first.
func TestShmSignals(t *testing.T) {
	h := newShmHarness(t)
	ref := testutil.RunProgram(testutil.Env(""), 60*time.Second, h.sig)
	if ref.ExitCode != 0 || !strings.Contains(string(ref.Stdout), "all ok") {
		t.Fatalf("shmsig without the library: %s\n%s%s", ref, ref.Stdout, ref.Stderr)
	}
	for _, v := range []struct {
		name string
		env  []string
	}{
		{"default", nil},
		{"poll-forever", []string{"VMA_RX_POLL=-1", "VMA_SELECT_POLL=-1"}},
		{"no-poll", []string{"VMA_RX_POLL=0", "VMA_SELECT_POLL=0"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			res := testutil.RunProgram(h.env(v.env...), 60*time.Second, h.sig)
			if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "all ok") {
				t.Errorf("shmsig under the library (%v): %s\n%s\nstderr:\n%s", v.env, res, res.Stdout,
					testutil.Tail(string(res.Stderr), 3000))
			}
		})
	}
	h.requireClean()
}
