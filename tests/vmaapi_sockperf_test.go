package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

var (
	sockperfValid   = regexp.MustCompile(`\[Valid Duration\] RunTime=[0-9.]+ sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
	sockperfLost    = regexp.MustCompile(`# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)`)
	sockperfSent    = regexp.MustCompile(`Total of (\d+) messages sent in [0-9.]+ sec`)
	sockperfHandled = regexp.MustCompile(`Total (\d+) messages received`)
	ansiEscape      = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// sockperfVMA returns the sockperf built with VMA's extra API by scripts/build-sockperf-vma.sh
// (<GOXIO_BIN>/sockperf-vma/bin/sockperf), or "" when there is none.
func sockperfVMA() string {
	p := filepath.Join(testutil.BinDir(), "sockperf-vma", "bin", "sockperf")
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

// TestIntegrationVMASockperf runs sockperf built with VMA's extra API (--enable-vma-api, its
// mellanox/vma_extra.h being goxio_extra.h) with server and client under the library over shared
// memory, UDP 64 B: --vmazcopyread ping-pong (both ends) and throughput (the server), and
// --vmarxfiltercb ping-pong and throughput (the server answers from inside its receive callback).
// Each run: client exit 0, no error from either end, the server found the API ("VMA Extra API is in
// use") and, with --vmarxfiltercb, registered its callback (its --debug line); ping-pong: every message answered, none
// dropped, duplicated or out of order; throughput: the server handled as many messages as the
// library delivered to its socket (goxio_stats), more than none. With --vmazcopyread the server's socket counts zero-copy receives in goxio_stats (the member
// was really used, not its copying fallback).
//
// The binary comes from scripts/build-sockperf-vma.sh (run by scripts/install-deps.sh), which builds
// it from Debian's source package; where that cannot be fetched the script says why and this test
// is skipped, naming the step.
func TestIntegrationVMASockperf(t *testing.T) {
	lib := integrationLib(t)
	sp := sockperfVMA()
	if sp == "" {
		t.Skipf("no sockperf built with VMA's extra API at %s: scripts/build-sockperf-vma.sh (run by "+
			"scripts/install-deps.sh, `make deps`) builds it from Debian's source package and printed why it could not",
			filepath.Join(testutil.BinDir(), "sockperf-vma", "bin", "sockperf"))
	}
	env := testutil.Env(lib, shmEnv...)
	for _, c := range []struct {
		name, test string
		srvOpt     string
		cliOpt     []string
		zcopy      bool
	}{
		{"vmazcopyread-pp", "ping-pong", "--vmazcopyread", []string{"--vmazcopyread"}, true},
		{"vmazcopyread-tp", "throughput", "--vmazcopyread", nil, true},
		{"vmarxfiltercb-pp", "ping-pong", "--vmarxfiltercb", nil, false},
		{"vmarxfiltercb-tp", "throughput", "--vmarxfiltercb", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := testutil.FreePort(t, "udp")
			addr := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)}
			// --debug: the server says whether it registered its callback (a few lines, none per message)
			srv := testutil.Start(t, "sockperf server", env, sp, append(append([]string{"server"}, addr...), c.srvOpt, "--debug")...)
			testutil.WaitBound(t, "udp", port, 20*time.Second, srv)
			cargs := append([]string{c.test, "-t", "1", "-m", "64"}, addr...)
			if c.test == "ping-pong" {
				// sockperf sizes its sample array for at most this rate (see TestIntegrationSockperf)
				cargs = append(cargs, "--mps", "1000000")
			} else {
				cargs = append(cargs, "--mps=max")
			}
			res := runClient(t, env, 60*time.Second, sp, append(cargs, c.cliOpt...)...)
			out := ansiEscape.ReplaceAllString(string(res.Stdout)+string(res.Stderr), "")
			checkNoSockperfError(t, "client", out)
			if srv.Exited() {
				t.Fatalf("sockperf server ended during the run:\n%s", testutil.Tail(srv.Output(), 3000))
			}
			// the server's counters while its socket is open
			var zc, rx uint64
			if snap := statsOf(t, srv.Cmd.Process.Pid); snap != nil {
				for _, s := range snap.Sockets {
					zc += s.Counters.RxZcopy
					rx += s.Counters.RxPackets + s.Counters.RxOSPackets
				}
			}
			// SIGINT: sockperf's server prints its totals and ends
			_ = syscall.Kill(srv.Cmd.Process.Pid, syscall.SIGINT)
			sres := srv.Wait(20 * time.Second)
			sout := ansiEscape.ReplaceAllString(string(sres.Stdout)+string(sres.Stderr), "")
			checkNoSockperfError(t, "server", sout)
			if !strings.Contains(sout, "VMA Extra API is in use") {
				t.Errorf("the server did not find VMA's extra API:\n%s", testutil.Tail(sout, 3000))
			}
			if c.srvOpt == "--vmarxfiltercb" && !strings.Contains(sout, "register_recv_callback successful") {
				t.Errorf("the server did not register its receive callback:\n%s", testutil.Tail(sout, 3000))
			}
			if c.test == "ping-pong" {
				if c.zcopy && !strings.Contains(out, "VMA Extra API is in use") {
					t.Errorf("the client did not find VMA's extra API:\n%s", testutil.Tail(out, 3000))
				}
				v := sockperfValid.FindStringSubmatch(out)
				l := sockperfLost.FindStringSubmatch(out)
				if v == nil || l == nil {
					t.Fatalf("no message counts in the client's output:\n%s", testutil.Tail(out, 3000))
				}
				if v[1] != v[2] || v[1] == "0" {
					t.Errorf("%s messages sent, %s answered", v[1], v[2])
				}
				if l[1] != "0" || l[2] != "0" || l[3] != "0" {
					t.Errorf("%s dropped, %s duplicated, %s out of order", l[1], l[2], l[3])
				}
			} else {
				s := sockperfSent.FindStringSubmatch(out)
				r := sockperfHandled.FindStringSubmatch(sout)
				if s == nil || r == nil {
					t.Fatalf("no message counts: client:\n%s\nserver:\n%s", testutil.Tail(out, 2000), testutil.Tail(sout, 2000))
				}
				// UDP: a full ring drops (the sender's tx_drops), and the count of sent messages
				// leaves out sockperf's warm-up: the server's count is checked against the library's
				got, _ := strconv.ParseUint(r[1], 10, 64)
				if got == 0 || got != rx {
					t.Errorf("the server handled %d messages, the library delivered %d to its socket (client sent %s)", got, rx, s[1])
				}
			}
			if c.zcopy && zc == 0 {
				t.Errorf("the server's socket counts no zero-copy receive (%d received): --vmazcopyread copied", rx)
			}
			t.Logf("%s: server received %d through the library, %d of them zero-copy", c.name, rx, zc)
		})
	}
}
