package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

var (
	sockperfLatency = regexp.MustCompile(`Summary: Latency is ([0-9.]+) usec`)
	sockperfAvg     = regexp.MustCompile(`avg-latency=([0-9.]+)`)
	sockperfRate    = regexp.MustCompile(`Summary: Message Rate is ([0-9]+) \[msg/sec\]`)
)

// TestIntegrationSockperf runs a `sockperf sr` server and 2-second ping-pong and throughput clients over
// UDP and TCP (sockperf ends its runs with SIGALRM), and requires exit 0, a parsed result line and no
// error from either side.
func TestIntegrationSockperf(t *testing.T) {
	lib := integrationLib(t)
	sockperf := testutil.Program(t, "sockperf", "sockperf")
	for _, proto := range []string{"udp", "tcp"} {
		for _, test := range []string{"pp", "tp"} {
			t.Run(proto+"-"+test, func(t *testing.T) {
				cmp := comparison{title: "sockperf " + test + " " + proto + " 2 s"}
				defer cmp.log(t)
				for _, m := range testutil.AllModes {
					t.Run(m.Name, func(t *testing.T) {
						port := testutil.FreePort(t, proto)
						args := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)}
						if proto == "tcp" {
							args = append(args, "--tcp")
						}
						srv := testutil.Start(t, "sockperf server", m.ServerEnv(lib), sockperf, append([]string{"sr"}, args...)...)
						testutil.WaitBound(t, proto, port, 20*time.Second, srv)
						cargs := append([]string{test, "-t", "2"}, args...)
						if test == "pp" {
							// sockperf sizes its sample array for at most 1 M round trips a
							// second with the default --mps=max and aborts ("_seqN >
							// m_maxSequenceNo") when a transport answers faster, as the
							// shared-memory rings do (GOXIO_TEST_LIB_ENV=GOXIO_SHM=1).
							cargs = append(cargs, "--mps", "1000000")
						}
						res := runClient(t, m.ClientEnv(lib), 60*time.Second, sockperf, cargs...)
						out := string(res.Stdout) + string(res.Stderr)
						checkNoSockperfError(t, "client", out)
						if test == "pp" {
							lat := sockperfLatency.FindStringSubmatch(out)
							avg := sockperfAvg.FindStringSubmatch(out)
							if lat == nil || avg == nil {
								t.Fatalf("no latency summary in the client's output:\n%s", testutil.Tail(out, 3000))
							}
							cmp.add(m, "avg latency %s usec", avg[1])
						} else {
							rate := sockperfRate.FindStringSubmatch(out)
							if rate == nil {
								t.Fatalf("no message rate in the client's output:\n%s", testutil.Tail(out, 3000))
							}
							if n, _ := strconv.Atoi(rate[1]); n <= 0 {
								t.Fatalf("message rate %s", rate[1])
							}
							cmp.add(m, "%s msg/s", rate[1])
						}
						if srv.Exited() {
							t.Fatalf("sockperf server ended during the run:\n%s", testutil.Tail(srv.Output(), 3000))
						}
						checkNoSockperfError(t, "server", srv.Output())
					})
				}
			})
		}
	}
}

func checkNoSockperfError(t *testing.T, who, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ERROR") || strings.Contains(line, "Segmentation") {
			t.Fatalf("sockperf %s reports an error: %s\n%s", who, line, testutil.Tail(out, 3000))
		}
	}
}
