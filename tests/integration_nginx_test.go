package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

var (
	wrkRequests = regexp.MustCompile(`(\d+) requests in [0-9.]+\w+, `)
	wrkRate     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkErrors   = regexp.MustCompile(`Socket errors: .*|Non-2xx or 3xx responses: \d+`)
)

// nginxConf is a self-contained configuration: master and two workers, everything under the prefix.
const nginxConf = `%s
daemon off;
master_process on;
worker_processes 2;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[2]s/tmp/body;
    proxy_temp_path %[2]s/tmp/proxy;
    fastcgi_temp_path %[2]s/tmp/fastcgi;
    uwsgi_temp_path %[2]s/tmp/uwsgi;
    scgi_temp_path %[2]s/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:%[3]d;
        root %[2]s/html;
    }
}
`

// TestIntegrationNginx runs nginx with a master and two worker processes (forked, not exec'ed) and
// checks curl bodies and a 2-second `wrk -t 1 -c 10` load with no socket errors and no non-2xx answers.
func TestIntegrationNginx(t *testing.T) {
	lib := integrationLib(t)
	nginx := testutil.Program(t, "nginx", "nginx")
	wrk := testutil.Program(t, "wrk", "wrk")
	curl := testutil.Program(t, "curl", "curl")
	cmp := comparison{title: "wrk -d 2 -t 1 -c 10 against nginx (2 workers)"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			prefix := t.TempDir()
			for _, d := range []string{"html", "tmp", "logs"} {
				if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			index := []byte("<html><body>goxio nginx test " + m.Name + "</body></html>\n")
			writeFile(t, filepath.Join(prefix, "html", "index.html"), index, 0o644)
			big := bytes.Repeat([]byte("nginx-big-body-0123456789\n"), 20000)
			writeFile(t, filepath.Join(prefix, "html", "big.txt"), big, 0o644)
			user := ""
			if os.Geteuid() == 0 {
				// Workers would switch to nobody, who cannot enter the test's private temporary folder.
				user = "user root;"
			}
			port := testutil.FreePort(t, "tcp")
			conf := filepath.Join(prefix, "nginx.conf")
			writeFile(t, conf, []byte(fmt.Sprintf(nginxConf, user, prefix, port)), 0o644)
			srv := testutil.Start(t, "nginx", m.ServerEnv(lib), nginx, "-p", prefix, "-c", conf)
			testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
			t.Cleanup(func() {
				if t.Failed() {
					if log, err := os.ReadFile(filepath.Join(prefix, "error.log")); err == nil {
						t.Logf("nginx error.log:\n%s", testutil.Tail(string(log), 4000))
					}
				}
			})
			waitWorkers(t, srv, 2)
			base := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
			env := m.ClientEnv(lib)

			res := runClient(t, env, 20*time.Second, curl, "-sS", "--fail", "--max-time", "15", base)
			if !bytes.Equal(res.Stdout, index) {
				t.Fatalf("curl /: got %q, want %q", testutil.Tail(string(res.Stdout), 200), index)
			}
			res = runClient(t, env, 20*time.Second, curl, "-sS", "--fail", "--max-time", "15", base+"big.txt")
			if !bytes.Equal(res.Stdout, big) {
				t.Fatalf("curl /big.txt: got %d bytes, want %d", len(res.Stdout), len(big))
			}

			res = runClient(t, env, 60*time.Second, wrk, "-d", "2", "-t", "1", "-c", "10", "--timeout", "5s", base)
			out := string(res.Stdout)
			if e := wrkErrors.FindString(out); e != "" {
				t.Fatalf("wrk: %s\n%s", e, out)
			}
			reqs := wrkRequests.FindStringSubmatch(out)
			rate := wrkRate.FindStringSubmatch(out)
			if reqs == nil || rate == nil {
				t.Fatalf("wrk printed no request count or rate:\n%s", out)
			}
			if n, _ := strconv.Atoi(reqs[1]); n <= 0 {
				t.Fatalf("wrk: %s requests", reqs[1])
			}
			cmp.add(m, "%s requests/s", rate[1])
			if srv.Exited() {
				t.Fatalf("nginx ended during the run:\n%s", testutil.Tail(srv.Output(), 3000))
			}
		})
	}
}

// waitWorkers waits until the nginx master has forked n worker processes.
func waitWorkers(t *testing.T, master *testutil.Proc, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(testutil.Children(master.Cmd.Process.Pid)) < n {
		if master.Exited() || time.Now().After(deadline) {
			t.Fatalf("nginx master has %d worker processes, want %d:\n%s",
				len(testutil.Children(master.Cmd.Process.Pid)), n, testutil.Tail(master.Output(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
