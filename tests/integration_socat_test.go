package tests

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// socatPayload is the data client i sends: distinct per client and long enough to need many segments.
func socatPayload(i, n int) []byte {
	var b bytes.Buffer
	for j := 0; b.Len() < n; j++ {
		fmt.Fprintf(&b, "client %d line %d\n", i, j)
	}
	return b.Bytes()[:n]
}

// runSocatClients runs n socat clients, the i-th started i*stagger after the first, each sending
// its payload on stdin, and returns their stdout (the echo) in client order.
func runSocatClients(t *testing.T, env []string, socat string, n, size int, stagger time.Duration, args ...string) [][]byte {
	t.Helper()
	outs := make([][]byte, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * stagger)
			cmd := exec.Command(socat, args...)
			cmd.Env = env
			cmd.Stdin = bytes.NewReader(socatPayload(i, size))
			res := testutil.Run(cmd, 30*time.Second)
			outs[i] = res.Stdout
			if res.ExitCode != 0 {
				errs[i] = fmt.Sprintf("client %d: %s\n%s", i, res, testutil.Tail(string(res.Stderr), 2000))
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return outs
}

// TestIntegrationSocatTCPFork runs `socat TCP-LISTEN:p,fork EXEC:cat` (a forked child per connection,
// each exec'ing cat) and four concurrent socat clients that each send 256 KiB and must get it back.
func TestIntegrationSocatTCPFork(t *testing.T) {
	lib := integrationLib(t)
	socat := testutil.Program(t, "socat", "socat")
	cmp := comparison{title: "socat TCP fork echo, 4 clients x 256 KiB"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			srv := testutil.Start(t, "socat server", m.ServerEnv(lib), socat,
				fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr", port), "EXEC:cat")
			testutil.WaitTCP(t, port, 20*time.Second, srv)
			start := time.Now()
			const size = 256 << 10
			outs := runSocatClients(t, m.ClientEnv(lib), socat, 4, size, 0, "-t", "10", "-",
				"TCP:127.0.0.1:"+strconv.Itoa(port))
			for i, got := range outs {
				if !bytes.Equal(got, socatPayload(i, size)) {
					t.Errorf("client %d: echo of %d bytes differs from the %d bytes sent", i, len(got), size)
				}
			}
			cmp.add(m, "%v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestIntegrationSocatUDPFork runs `socat UDP-RECVFROM:p,fork EXEC:head` (a forked child per
// datagram, which execs head) and six socat clients that each send one datagram and must get it back.
func TestIntegrationSocatUDPFork(t *testing.T) {
	lib := integrationLib(t)
	socat := testutil.Program(t, "socat", "socat")
	cmp := comparison{title: "socat UDP fork echo, 6 clients"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "udp")
			// Each child echoes one datagram and ends (head exits after it): socat's children
			// of UDP-RECVFROM keep reading the socket they share with the parent, so a child
			// that lingered could take the next client's datagram, with the kernel too (two
			// of six clients without an echo in two CI runs, with the library on either end).
			// The clients start 200 ms apart, after the previous child ended.
			const size = 1000
			srv := testutil.Start(t, "socat server", m.ServerEnv(lib), socat,
				fmt.Sprintf("UDP-RECVFROM:%d,bind=127.0.0.1,fork", port), fmt.Sprintf("EXEC:head -c %d", size))
			testutil.WaitBound(t, "udp", port, 20*time.Second, srv)
			start := time.Now()
			outs := runSocatClients(t, m.ClientEnv(lib), socat, 6, size, 200*time.Millisecond, "-t", "5", "-T", "10", "-",
				"UDP:127.0.0.1:"+strconv.Itoa(port))
			for i, got := range outs {
				if !bytes.Equal(got, socatPayload(i, size)) {
					t.Errorf("client %d: echo %q, want the %d bytes sent", i, testutil.Tail(string(got), 80), size)
				}
			}
			cmp.add(m, "%v", time.Since(start).Round(time.Millisecond))
		})
	}
}
