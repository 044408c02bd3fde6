package tests

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// iperfReport is the part of iperf3's --json output the test reads.
type iperfReport struct {
	Error string `json:"error"`
	End   struct {
		SumSent struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		Sum struct { // UDP
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			LostPercent   float64 `json:"lost_percent"`
			Packets       float64 `json:"packets"`
		} `json:"sum"`
	} `json:"end"`
}

func parseIperf(t *testing.T, who string, out []byte) iperfReport {
	t.Helper()
	var r iperfReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("iperf3 %s: bad JSON (%v):\n%s", who, err, testutil.Tail(string(out), 3000))
	}
	if r.Error != "" {
		t.Fatalf("iperf3 %s reports an error: %s", who, r.Error)
	}
	return r
}

// TestIntegrationIperf3 runs iperf3 for 2 s over TCP and over UDP (100 Mbit/s) with a one-off server,
// and requires both sides to succeed, bytes to flow and UDP loss to stay sane.
func TestIntegrationIperf3(t *testing.T) {
	lib := integrationLib(t)
	iperf := testutil.Program(t, "iperf3", "iperf3")
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			cmp := comparison{title: "iperf3 " + proto + " 2 s"}
			defer cmp.log(t)
			for _, m := range testutil.AllModes {
				t.Run(m.Name, func(t *testing.T) {
					port := testutil.FreePortBoth(t)
					srv := testutil.Start(t, "iperf3 server", m.ServerEnv(lib), iperf, "-s", "-1", "--json",
						"-B", "127.0.0.1", "-p", strconv.Itoa(port))
					// iperf3 -1 would take a probing connection for its one client: wait without connecting.
					testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
					args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2", "--json"}
					if proto == "udp" {
						args = append(args, "-u", "-b", "100M")
					}
					res := runClient(t, m.ClientEnv(lib), 40*time.Second, iperf, args...)
					cr := parseIperf(t, "client", res.Stdout)
					sres := srv.Wait(20 * time.Second)
					if sres.ExitCode != 0 {
						t.Fatalf("iperf3 server: %s\n%s", sres, testutil.Tail(string(sres.Stdout), 3000))
					}
					parseIperf(t, "server", sres.Stdout)
					if proto == "tcp" {
						if cr.End.SumSent.Bytes <= 0 || cr.End.SumReceived.Bytes <= 0 {
							t.Fatalf("tcp: sent %.0f bytes, received %.0f", cr.End.SumSent.Bytes, cr.End.SumReceived.Bytes)
						}
						cmp.add(m, "%.2f Gbit/s received", cr.End.SumReceived.BitsPerSecond/1e9)
						return
					}
					if cr.End.Sum.Bytes <= 0 || cr.End.Sum.Packets <= 0 {
						t.Fatalf("udp: %.0f bytes in %.0f packets", cr.End.Sum.Bytes, cr.End.Sum.Packets)
					}
					if cr.End.Sum.LostPercent > 50 {
						t.Fatalf("udp: %.1f%% of the datagrams lost on loopback at 100 Mbit/s", cr.End.Sum.LostPercent)
					}
					cmp.add(m, "%.1f Mbit/s, %.2f%% lost", cr.End.Sum.BitsPerSecond/1e6, cr.End.Sum.LostPercent)
				})
			}
		})
	}
}
