package tests

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

var redisRate = regexp.MustCompile(`\b(SET|GET): ([0-9.]+) requests per second`)

// TestIntegrationRedis runs redis-server with persistence off, a redis-cli SET/GET round trip (also of
// a 100 KiB value read from stdin) and `redis-benchmark -n 20000 -q -t set,get`, which must report a
// rate for both commands.
func TestIntegrationRedis(t *testing.T) {
	lib := integrationLib(t)
	server := testutil.Program(t, "redis-server", "redis-server")
	cli := testutil.Program(t, "redis-cli", "redis-tools")
	bench := testutil.Program(t, "redis-benchmark", "redis-tools")
	cmp := comparison{title: "redis-benchmark -n 20000 (SET, GET requests/s)"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			ps := strconv.Itoa(port)
			srv := testutil.Start(t, "redis-server", m.ServerEnv(lib), server, "--port", ps, "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir(), "--logfile", "")
			testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
			env := m.ClientEnv(lib)
			base := []string{"-h", "127.0.0.1", "-p", ps}

			res := runClient(t, env, 20*time.Second, cli, append(base, "SET", "goxio:key", "value-"+m.Name)...)
			if got := strings.TrimSpace(string(res.Stdout)); got != "OK" {
				t.Fatalf("SET answered %q, want OK", got)
			}
			res = runClient(t, env, 20*time.Second, cli, append(base, "GET", "goxio:key")...)
			if got := strings.TrimSpace(string(res.Stdout)); got != "value-"+m.Name {
				t.Fatalf("GET answered %q, want %q", got, "value-"+m.Name)
			}

			big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
			cmd := testutil.Command(env, cli, append(base, "-x", "SET", "goxio:big")...)
			cmd.Stdin = bytes.NewReader(big)
			if r := testutil.Run(cmd, 20*time.Second); r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != "OK" {
				t.Fatalf("SET of 100 KiB from stdin: %s, answered %q\n%s", r, r.Stdout, r.Stderr)
			}
			res = runClient(t, env, 20*time.Second, cli, append(base, "STRLEN", "goxio:big")...)
			if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(big)) {
				t.Fatalf("STRLEN of the big value = %q, want %d", got, len(big))
			}
			res = runClient(t, env, 20*time.Second, cli, append(base, "--no-raw", "GET", "goxio:big")...)
			if !bytes.Contains(res.Stdout, big[:1000]) || len(res.Stdout) < len(big) {
				t.Fatalf("GET of the big value returned %d bytes", len(res.Stdout))
			}

			res = runClient(t, env, 120*time.Second, bench, append(base, "-n", "20000", "-q", "-t", "set,get")...)
			rates := redisRate.FindAllStringSubmatch(string(res.Stdout), -1)
			if len(rates) != 2 {
				t.Fatalf("redis-benchmark printed %d rates, want SET and GET:\n%s", len(rates), res.Stdout)
			}
			cmp.add(m, "%s %s, %s %s", rates[0][1], rates[0][2], rates[1][1], rates[1][2])
			if srv.Exited() {
				t.Fatalf("redis-server ended during the run:\n%s", testutil.Tail(srv.Output(), 3000))
			}
		})
	}
}
