package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
)

// goxio_stats against a program that publishes with the stats writer
// directly (tests/stats_testprog): exact counts in text and JSON, zeroing,
// cleaning of a killed process's segment, consistency under churn,
// commands, messages, views and export formats.

// statsDir returns a fresh stats directory readable by other users (the
// permission test runs the tool as nobody).
func statsDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for p := d; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	return d
}

func TestStatsToolCountsExactly(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	const n = 12345
	p.do("open 5")
	p.do("count 5 %d", n)
	p.do("tcp 6")
	p.do("osrx 6 77")

	res := runStatsTool(t, "-k", dir, "-c", "1")
	if res.code != 0 {
		t.Fatalf("goxio_stats exit %d: %s", res.code, res.stderr)
	}
	if off, os := textRx(t, res.stdout, 5); off != n || os != 0 {
		t.Errorf("text view: fd 5 rx %d offloaded, %d os; want %d, 0\n%s", off, os, n, res.stdout)
	}
	if off, os := textRx(t, res.stdout, 6); off != 0 || os != 77 {
		t.Errorf("text view: fd 6 rx %d offloaded, %d os; want 0, 77", off, os)
	}
	if !strings.Contains(res.stdout, "with pid: "+strconv.Itoa(p.pid)) || !strings.Contains(res.stdout, "os(rule)") {
		t.Errorf("text view misses the pid line or the transport:\n%s", res.stdout)
	}

	res = runStatsTool(t, "-k", dir, "-p", strconv.Itoa(p.pid), "--json", "-c", "1")
	if res.code != 0 {
		t.Fatalf("goxio_stats --json exit %d: %s", res.code, res.stderr)
	}
	docs := parseStatsDocs(t, res.stdout)
	if len(docs) != 1 {
		t.Fatalf("%d JSON documents for -c 1", len(docs))
	}
	s := socketOf(t, docs[0], p.pid, 5)
	if s.Counters.RxPackets != n || s.Counters.TxPackets != n || s.Counters.RxBytes != 100*n {
		t.Errorf("JSON fd 5 counters %+v, want %d packets", s.Counters, n)
	}
	if s.Transport != stats.TransportSHM || s.Local.Port() != 5005 {
		t.Errorf("JSON fd 5: transport %v local %v", s.Transport, s.Local)
	}
	tcp := socketOf(t, docs[0], p.pid, 6)
	if tcp.Counters.RxOSPackets != 77 || tcp.Reason != stats.ReasonRule || tcp.RuleLine != 3 || tcp.State != stats.TCPEstablished {
		t.Errorf("JSON fd 6 %+v", tcp)
	}
	if got := docs[0].Processes[0].Process.AppID; got != "stats-test" {
		t.Errorf("app id %q", got)
	}
	// Totals stay totals over several cycles.
	res = runStatsTool(t, "-k", dir, "--json", "-c", "3", "-i", "0.05")
	docs = parseStatsDocs(t, res.stdout)
	if len(docs) != 3 {
		t.Fatalf("%d JSON documents for -c 3", len(docs))
	}
	for i, d := range docs {
		if got := socketOf(t, d, p.pid, 5).Counters.RxPackets; got != n {
			t.Errorf("cycle %d reports %d rx packets, want %d", i, got, n)
		}
	}
}

func TestStatsToolZeroThenCount(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	p.do("open 5")
	p.do("open 7")
	p.do("count 5 1000")
	p.do("count 7 1000")

	res := runStatsTool(t, "-k", dir, "-Z", "--json", "-c", "1")
	if res.code != 0 {
		t.Fatalf("goxio_stats -Z exit %d: %s", res.code, res.stderr)
	}
	d := parseStatsDocs(t, res.stdout)[0]
	for _, fd := range []int{5, 7} {
		if c := socketOf(t, d, p.pid, fd).Counters; c.RxPackets != 0 || c.TxPackets != 0 || c.RxBytes != 0 {
			t.Errorf("after -Z fd %d reads %+v", fd, c)
		}
	}
	if !strings.Contains(res.stderr, "zeroed") {
		t.Errorf("no zero confirmation on stderr: %q", res.stderr)
	}
	p.do("count 5 321")
	res = runStatsTool(t, "-k", dir, "-c", "1")
	if off, _ := textRx(t, res.stdout, 5); off != 321 {
		t.Errorf("after -Z counted %d, want 321", off)
	}
	// -s limits zeroing to the selected sockets.
	p.do("count 7 5")
	runStatsTool(t, "-k", dir, "-z", "-s", "5", "-c", "1")
	d = parseStatsDocs(t, runStatsTool(t, "-k", dir, "--json", "-c", "1").stdout)[0]
	if got := socketOf(t, d, p.pid, 5).Counters.RxPackets; got != 0 {
		t.Errorf("-z -s 5 left fd 5 at %d", got)
	}
	if got := socketOf(t, d, p.pid, 7).Counters.RxPackets; got != 5 {
		t.Errorf("-z -s 5 touched fd 7: %d, want 5", got)
	}
}

func TestStatsToolCleansKilledProcess(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	p.do("open 5")
	path := filepath.Join(dir, stats.FilePrefix+strconv.Itoa(p.pid))
	p.kill()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("killed process left no segment to clean: %v", err)
	}
	res := runStatsTool(t, "-k", dir, "-F", "-p", strconv.Itoa(p.pid), "-c", "1")
	if res.code == 0 || !strings.Contains(res.stderr, "is gone") {
		t.Errorf("-F -p dead: exit %d stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("-F removed the stale segment: %v", err)
	}
	res = runStatsTool(t, "-k", dir, "-c", "1")
	if res.code == 0 || !strings.Contains(res.stderr, "no goxio process found") {
		t.Errorf("after the kill: exit %d stderr %q", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "removed "+path) {
		t.Errorf("no removal message: %q", res.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stale segment still there: %v", err)
	}

	// A clean exit removes the segment itself.
	p2 := startStatsProg(t, dir)
	path2 := filepath.Join(dir, stats.FilePrefix+strconv.Itoa(p2.pid))
	p2.do("exit")
	p2.wait()
	if _, err := os.Stat(path2); !os.IsNotExist(err) {
		t.Fatalf("segment of a cleanly exited process remains: %v", err)
	}
}

// TestStatsToolTightLoopChurn runs goxio_stats --json every millisecond
// while the program opens and closes hundreds of thousands of sockets whose
// metadata is derived from their fd: no printed slot may be inconsistent.
func TestStatsToolTightLoopChurn(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir, "-slots", "64")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, statsTool(t), "-k", dir, "-p", strconv.Itoa(p.pid), "--json", "-i", "0.001", "-c", "0")
	cmd.Env = statsToolEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		docs, slots int
		errs        []string
	}
	results := make(chan result, 1)
	go func() {
		// No t.Fatal here: this is not the test goroutine.
		r := result{}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var d statsDoc
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				r.errs = append(r.errs, "invalid JSON: "+err.Error())
				continue
			}
			r.docs++
			for _, pr := range d.Processes {
				for _, s := range pr.Sockets {
					if s.FD < 100000 {
						continue
					}
					r.slots++
					if err := checkChurnSlot(s); err != nil && len(r.errs) < 10 {
						r.errs = append(r.errs, fmt.Sprintf("inconsistent slot printed: %v (%+v)", err, s))
					}
				}
			}
		}
		results <- r
	}()
	// Let the tool start, then churn.
	time.Sleep(200 * time.Millisecond)
	deadline := time.Now().Add(6 * time.Second)
	for round := 0; round < 20 && time.Now().Before(deadline); round++ {
		p.do("churn 20000")
	}
	cmd.Process.Signal(syscall.SIGINT)
	var r result
	select {
	case r = <-results:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("goxio_stats did not stop after SIGINT")
	}
	cmd.Wait()
	for _, e := range r.errs {
		t.Error(e)
	}
	t.Logf("%d documents, %d churn slots checked", r.docs, r.slots)
	if r.docs < 20 || r.slots < 20 {
		t.Fatalf("the reader barely overlapped the churn: %d documents, %d slots", r.docs, r.slots)
	}
}

// checkChurnSlot checks the invariants stats_testprog's churn keeps.
func checkChurnSlot(s stats.SocketSnapshot) error {
	fd := s.FD
	bad := func(what string) error { return &churnError{fd, what} }
	if s.Inode != 0 && s.Inode != uint64(fd)*7 {
		return bad("inode")
	}
	if s.Local.IsValid() && s.Local.Port() != uint16(fd%60000+1) {
		return bad("port")
	}
	if s.RuleLine != 0 && (s.RuleLine != fd || s.Rule != "churn "+strconv.Itoa(fd)) {
		return bad("rule")
	}
	if s.Counters.RxPackets > uint64(fd%5) || s.Counters.RxBytes > uint64(fd%5)*uint64(fd%1000) {
		return bad("counters")
	}
	return nil
}

type churnError struct {
	fd   int
	what string
}

func (e *churnError) Error() string { return "fd " + strconv.Itoa(e.fd) + ": wrong " + e.what }

func TestStatsToolCommands(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	p.do("open 5")
	res := runStatsTool(t, "-k", dir, "-l", "debug", "-D", "2", "-c", "1")
	if res.code != 0 {
		t.Fatalf("-l -D: exit %d %s", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-S", "5", "fine")
	if res.code != 0 || res.stdout != "" {
		t.Fatalf("-S 5 fine: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "--fd_dump=0")
	if res.code != 0 {
		t.Fatalf("-S 0: exit %d %s", res.code, res.stderr)
	}
	p.do("open 9") // flush: the program has printed the command lines by now
	for _, want := range []string{"cmd loglevel 5", "cmd details 2", "cmd dump 5 6", "cmd dump -1 3"} {
		if !p.saw(want) {
			t.Errorf("the program did not get %q", want)
		}
	}

	q := startStatsProg(t, dir, "-nopoll")
	res = runStatsTool(t, "-k", dir, "-p", strconv.Itoa(q.pid), "-l", "info", "--ack_timeout", "200ms", "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "not acknowledged") {
		t.Errorf("command to a process that does not poll: exit %d stderr %q", res.code, res.stderr)
	}
}

func TestStatsToolMessages(t *testing.T) {
	dir := statsDir(t)
	res := runStatsTool(t, "-k", dir, "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "no goxio process found") {
		t.Errorf("empty dir: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", filepath.Join(dir, "missing"), "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "does not exist") {
		t.Errorf("missing dir: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-p", "4000000", "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "not found") {
		t.Errorf("unknown pid: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-p", strconv.Itoa(os.Getpid()), "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "not running under goxio") {
		t.Errorf("pid without segment: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-v", "9")
	if res.code != 2 || !strings.Contains(res.stderr, "invalid value") {
		t.Errorf("bad view: exit %d stderr %q", res.code, res.stderr)
	}

	// Layout mismatch: a segment of a newer layout for a live pid (ours).
	p := startStatsProg(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, stats.FilePrefix+strconv.Itoa(p.pid)))
	if err != nil {
		t.Fatal(err)
	}
	b[8] = 99 // layout version word
	other := statsDir(t)
	fake := filepath.Join(other, stats.FilePrefix+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(fake, b, 0o600); err != nil {
		t.Fatal(err)
	}
	res = runStatsTool(t, "-k", other, "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "layout version mismatch") || !strings.Contains(res.stderr, "version 99") {
		t.Errorf("layout mismatch: exit %d stderr %q", res.code, res.stderr)
	}

	// Corrupt and truncated segments: an error, never a crash.
	orig := append([]byte{}, b...)
	orig[8] = stats.LayoutVersion
	for name, data := range map[string][]byte{
		"truncated": orig[:len(orig)/3],
		"garbage":   bytes.Repeat([]byte{0xa5}, len(b)),
	} {
		if err := os.WriteFile(fake, data, 0o600); err != nil {
			t.Fatal(err)
		}
		res = runStatsTool(t, "-k", other, "-p", strconv.Itoa(os.Getpid()), "-c", "1")
		if res.code != 1 || !strings.Contains(res.stderr, "stats segment") || strings.Contains(res.stderr, "panic") {
			t.Errorf("%s segment: exit %d stderr %q", name, res.code, res.stderr)
		}
	}

	// Two processes: the tool asks which.
	p2 := startStatsProg(t, dir)
	res = runStatsTool(t, "-k", dir, "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "several goxio processes") || !strings.Contains(res.stderr, strconv.Itoa(p2.pid)) {
		t.Errorf("two processes: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-n", "stats_testprog", "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "several goxio processes") {
		t.Errorf("-n with two matches: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-n", "nosuchprogram", "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, `no goxio process named "nosuchprogram"`) {
		t.Errorf("-n without match: exit %d stderr %q", res.code, res.stderr)
	}

	// The process ends while the tool watches it.
	cmd := exec.Command(statsTool(t), "-k", dir, "-p", strconv.Itoa(p2.pid), "-i", "0.05")
	cmd.Env = statsToolEnv()
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	p2.do("exit")
	errText, _ := io.ReadAll(stderr)
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil || !strings.Contains(string(errText), "ended - exiting") {
			t.Errorf("process exit while watched: %v, stderr %q", err, errText)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("goxio_stats did not notice the process ended")
	}
}

// TestStatsToolPermissionDenied runs the tool as nobody against a root
// process's 0600 segment.
func TestStatsToolPermissionDenied(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the tool as another user")
	}
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	// A copy of the tool nobody can execute wherever the build folder is.
	bin := filepath.Join(statsDir(t), "goxio_stats")
	data, err := os.ReadFile(statsTool(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-k", dir, "-p", strconv.Itoa(p.pid), "-c", "1")
	cmd.Env = statsToolEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied") || !strings.Contains(string(out), "another user") {
		t.Fatalf("tool as nobody: %v\n%s", err, out)
	}
}

func TestStatsToolViews(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	p.do("open 5")
	p.do("count 5 2048")
	p.do("join 5 224.4.4.4")
	p.do("tcp 6")
	pid := strconv.Itoa(p.pid)
	checks := []struct {
		args []string
		want []string
	}{
		{[]string{"-v", "2"}, []string{"---- queue pkt -----", " 5   Rx:       2048"}},
		{[]string{"-v", "3"}, []string{"Fd=[5]", "- Member of = [224.4.4.4]", "- Transport = shm",
			"Rx Offload: 200 / 2048 / 0 / 0", "- Rule = line 3: use os tcp_client *:7000", "GLOBAL_STATS"}},
		{[]string{"-v", "4"}, []string{"[224.4.4.4]           5"}},
		{[]string{"-v", "5"}, []string{"Proto Offloaded Transport", "udp   Yes       shm", "tcp   No        os:rule",
			"127.0.0.1:40000", "ESTABLISHED", "/stats_testprog"}},
		{[]string{"-d", "2", "-i", "0.2"}, []string{"pkt/s", " 5   Rx:          0"}},
		{[]string{"-s", "6"}, []string{" 6   Rx:"}},
		{[]string{"--prometheus"}, []string{
			`goxio_socket_packets_total{pid="` + pid + `",program="stats_testprog",fd="5",proto="udp",transport="shm",direction="rx",path="offload"} 2048`,
			"# TYPE goxio_socket_packets_total counter",
			`goxio_socket_multicast_member{pid="` + pid + `"`}},
		{[]string{"-V"}, []string{"goxio_stats: goxio ", "stats layout 2"}},
		{[]string{"-h"}, []string{"--fd_dump=<fd> [<level>]", "--prometheus"}},
	}
	for _, c := range checks {
		args := append([]string{"-k", dir, "-c", "1"}, c.args...)
		res := runStatsTool(t, args...)
		if res.code != 0 {
			t.Errorf("goxio_stats %v: exit %d %s", c.args, res.code, res.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(res.stdout, w) {
				t.Errorf("goxio_stats %v: output lacks %q:\n%s", c.args, w, res.stdout)
			}
		}
	}
	res := runStatsTool(t, "-k", dir, "-c", "1", "-s", "6")
	if strings.Contains(res.stdout, " 5   Rx:") {
		t.Errorf("-s 6 shows fd 5:\n%s", res.stdout)
	}
	res = runStatsTool(t, "-k", dir, "-c", "1", "-d", "2", "-i", "0.2", "--json")
	if d := parseStatsDocs(t, res.stdout); d[0].Details != "deltas" {
		t.Errorf("--json -d 2 details %q", d[0].Details)
	}
}

func TestStatsToolServe(t *testing.T) {
	dir := statsDir(t)
	p := startStatsProg(t, dir)
	p.do("open 5")
	p.do("count 5 31")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, statsTool(t), "-k", dir, "--serve", "127.0.0.1:0")
	cmd.Env = statsToolEnv()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var url string
	re := regexp.MustCompile(`http://(\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = "http://" + m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("goxio_stats --serve printed no address")
	}
	go io.Copy(io.Discard, stderr)
	get := func(path string) string {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	if m := get("/metrics"); !strings.Contains(m, `fd="5",proto="udp",transport="shm",direction="rx",path="offload"} 31`) {
		t.Errorf("/metrics:\n%s", m)
	}
	p.do("count 5 1")
	d := parseStatsDocs(t, get("/json"))
	if got := socketOf(t, d[0], p.pid, 5).Counters.RxPackets; got != 32 {
		t.Errorf("/json rx packets %d, want 32", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("goxio_stats --serve after SIGTERM: %v", err)
	}
}
