package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestIntegrationVMAExtraAPI runs programs written against goxio_extra.h (tests/vmaapi/*.c).
// zcopy.c: without the library it finds no API and copies; under the library it gets VMA's API object and
// moves UDP datagrams (held together, checked after the sender closed, freed with double, foreign
// and cross-socket frees refused) and a TCP stream through recvfrom_zcopy and free_packets, on the
// kernel and on the shared-memory transports; with GOXIO_EXTRA_API=0 the mask is empty, every
// member refuses with EOPNOTSUPP, and it takes its fallback path. callback.c: a receive callback's
// DROP, RECV and HOLD verdicts against read, recv, recvfrom and recvmsg, or the program's own
// filtering without it. rules.c: add_conf_rule's rules decide the next sockets, first in the list;
// dump_fd_stats logs the socket. header.c: get_socket_network_header of a connected UDP socket
// equals the datagram captured on lo (kernel transport, as root). thread.c: thread_offload(0, tid) keeps a thread's new sockets with the
// kernel (the EINVAL probes say so), thread_offload(1, tid) undoes it. zmix.c: recvfrom_zcopy mixed
// with recv, peeks, read, poll, epoll, FIONREAD, a dup whose original is closed and frees in mixed
// order, while datagrams wait in the library's box (shared memory): the same datagrams in the same
// order, the socket readable as long as any wait. sockperf.c: what sockperf 3.7 built with
// --enable-vma-api does (its readv/writev macros before the header, vma_get_api, --vmazcopyread
// ping-pong freeing at the next receive, --vmarxfiltercb answering from inside the callback and
// unregistering at close). The data each prints is the same in every run.
func TestIntegrationVMAExtraAPI(t *testing.T) {
	lib := integrationLib(t)
	runs := []struct {
		name, mode string
		env        []string
	}{
		{"kernel transport", "full", testutil.Env(lib, offEnv...)},
		{"shared memory", "full", testutil.Env(lib, shmEnv...)},
		{"mask cleared", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=0"}, offEnv...)...)},
		{"mask cleared, shared memory", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=off"}, shmEnv...)...)},
	}
	for _, prog := range []string{"zcopy", "callback", "thread", "rules", "header", "zmix", "sockperf"} {
		t.Run(prog, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), prog)
			testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", prog+".c"), bin, "-O2", "-Wall", "-Werror")
			want := runClient(t, testutil.Env(""), 30*time.Second, bin, "none")
			for _, r := range runs {
				got := runClient(t, r.env, 30*time.Second, bin, r.mode)
				if !bytes.Equal(got.Stdout, want.Stdout) {
					t.Errorf("%s: output differs from the run without the library:\n%s\nwant:\n%s\nstderr:\n%s", r.name,
						got.Stdout, want.Stdout, testutil.Tail(string(got.Stderr), 2000))
				}
				if bytes.Contains(got.Stderr, []byte("unknown parameter")) {
					t.Errorf("%s: %s", r.name, got.Stderr)
				}
				if prog == "rules" && r.mode == "full" {
					checkDump(t, r.name, string(got.Stderr))
				}
				// the kernel carries this run's datagrams (the shared-memory transports off)
				if prog == "header" && r.name == "kernel transport" && os.Geteuid() == 0 &&
					!bytes.Contains(got.Stderr, []byte("header equals the captured datagram's")) {
					t.Errorf("%s: the header was not compared with a captured datagram:\n%s", r.name, got.Stderr)
				}
			}
		})
	}
}

// checkDump finds the log line dump_fd_stats wrote for the fd rules.c names ("dump fd N").
func checkDump(t *testing.T, name, stderr string) {
	t.Helper()
	m := regexp.MustCompile(`dump fd (\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Errorf("%s: rules.c did not say which fd it dumped:\n%s", name, stderr)
		return
	}
	if !regexp.MustCompile(`fd dump .*fd=` + m[1] + ` udp transport=`).MatchString(stderr) {
		t.Errorf("%s: no log line of fd %s from dump_fd_stats:\n%s", name, m[1], stderr)
	}
}

// TestIntegrationVMAZeroCopyRing runs tests/vmaapi/zring.c: on the shared-memory transport
// recvfrom_zcopy hands datagrams over inside the sender's ring (the iovec is in a /dev/shm
// mapping and aliases the ring's file), held records survive their sender's exit and the ring goes
// with the last free, held records stop the sender (EAGAIN) until freed, and double, foreign and
// cross-socket frees are refused; the statistics show the zero-copy receives and the records held
// (goxio_stats --json and -v 3) while the program holds them. On the kernel transport the same calls
// copy, outside shared memory; with GOXIO_EXTRA_API=0 the program takes its recvfrom path; without
// the library too. The output is the same in every run.
func TestIntegrationVMAZeroCopyRing(t *testing.T) {
	lib := integrationLib(t)
	bin := filepath.Join(t.TempDir(), "zring")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", "zring.c"), bin, "-O2", "-Wall", "-Werror")
	want := runClient(t, testutil.Env(""), 60*time.Second, bin, "none")
	for _, r := range []struct {
		name, mode string
		env        []string
	}{
		{"kernel transport", "copy", testutil.Env(lib, offEnv...)},
		{"mask cleared", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=0"}, shmEnv...)...)},
	} {
		got := runClient(t, r.env, 60*time.Second, bin, r.mode)
		if !bytes.Equal(got.Stdout, want.Stdout) {
			t.Errorf("%s: output differs from the run without the library:\n%s\nwant:\n%s", r.name, got.Stdout, want.Stdout)
		}
	}

	// Shared memory: the statistics are read while the program holds its records.
	cmd := testutil.Command(testutil.Env(lib, append([]string{"VMA_TX_NONBLOCKED_EAGAINS=1"}, shmEnv...)...), bin, "ring", "wait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errText testutil.SyncBuffer
	cmd.Stderr = &errText
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	holding := -1
	for deadline := time.Now().Add(60 * time.Second); holding < 0 && time.Now().Before(deadline); {
		if m := regexp.MustCompile(`(?m)^HOLDING (\d+)$`).FindStringSubmatch(errText.String()); m != nil {
			holding, _ = strconv.Atoi(m[1])
			break
		}
		select {
		case <-done:
			t.Fatalf("shared memory: the program ended before it held its records:\n%s", testutil.Tail(errText.String(), 3000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if holding < 0 {
		t.Fatalf("shared memory: the program never held its records:\n%s", testutil.Tail(errText.String(), 3000))
	}
	pid := cmd.Process.Pid
	snap := statsOf(t, pid)
	var zc, held uint64
	if snap != nil {
		for _, s := range snap.Sockets {
			zc += s.Counters.RxZcopy
			held += s.Counters.RxHeld
		}
	}
	// the open socket's: every datagram of the burst, all held (the first part's socket is closed)
	if zc != uint64(holding) || held != uint64(holding) {
		t.Errorf("shared memory: statistics say %d zero-copy receives and %d held, want %d and %d", zc, held, holding, holding)
	}
	view := runStatsTool(t, "-v", "3", "-c", "1", "-F", "-p", strconv.Itoa(pid))
	if !regexp.MustCompile(`Rx zero-copy: \d+ / ` + strconv.Itoa(holding) + ` \[packets/held now\]`).MatchString(view.stdout) {
		t.Errorf("shared memory: goxio_stats -v 3 does not show %d records held:\n%s", holding, testutil.Tail(view.stdout, 3000))
	}
	stdin.Write([]byte("g"))
	stdin.Close()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		err = <-done
	}
	if err != nil {
		t.Fatalf("shared memory: %v\n%s", err, testutil.Tail(errText.String(), 3000))
	}
	if !bytes.Equal(stdout.Bytes(), want.Stdout) {
		t.Errorf("shared memory: output differs from the run without the library:\n%s\nwant:\n%s", stdout.Bytes(), want.Stdout)
	}
	t.Logf("%d records held stopped the sender", holding)

	// zbench.c under load: every datagram whole and in order through wrapping rings, zero-copy
	// freed one by one and in batches, and copied (a short run: the figures are the benchmark's).
	zb := filepath.Join(t.TempDir(), "zbench")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", "zbench.c"), zb, "-O2", "-Wall", "-Werror")
	line := regexp.MustCompile(`^\w+ size 1400 msgs/s \d+ MB/s [\d.]+ cpu_ns/msg \d+ received \d+ sum \d+\n$`)
	for _, mode := range []string{"zcopy", "zcopy16", "copy"} {
		got := runClient(t, testutil.Env(lib, shmEnv...), 30*time.Second, zb, mode, "1400", "0.3")
		if !line.Match(got.Stdout) {
			t.Errorf("zbench %s: %q", mode, got.Stdout)
		}
	}
}
