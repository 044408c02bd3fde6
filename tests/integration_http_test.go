package tests

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestIntegrationCurlPythonHTTP downloads a random 1 MiB file from `python3 -m http.server` with curl,
// with the library on neither, both and each one end, and compares SHA-256 sums.
func TestIntegrationCurlPythonHTTP(t *testing.T) {
	lib := integrationLib(t)
	python := testutil.Python(t)
	curl := testutil.Program(t, "curl", "curl")
	dir := t.TempDir()
	blob := make([]byte, 1<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatalf("random data: %v", err)
	}
	writeFile(t, filepath.Join(dir, "blob.bin"), blob, 0o644)
	want := sha256.Sum256(blob)
	cmp := comparison{title: "curl 1 MiB from python http.server"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			srv := testutil.Start(t, "python3 http.server", m.ServerEnv(lib), python, "-m", "http.server",
				strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", dir)
			testutil.WaitTCP(t, port, 20*time.Second, srv)
			out := filepath.Join(t.TempDir(), "download")
			url := fmt.Sprintf("http://127.0.0.1:%d/blob.bin", port)
			for i := 0; i < 3; i++ {
				start := time.Now()
				runClient(t, m.ClientEnv(lib), 60*time.Second, curl, "-sS", "--fail", "--max-time", "50",
					"-o", out, url)
				el := time.Since(start)
				got, err := os.ReadFile(out)
				if err != nil {
					t.Fatalf("read download: %v", err)
				}
				if sum := sha256.Sum256(got); sum != want {
					t.Fatalf("download %d: %d bytes with sha256 %s, want %d bytes with %s", i, len(got),
						hex.EncodeToString(sum[:]), len(blob), hex.EncodeToString(want[:]))
				}
				if i == 2 {
					cmp.add(m, "third download %v", el.Round(time.Millisecond))
				}
			}
		})
	}
}

// nodeServer is a Node.js HTTP server whose body for /n is nodeBody(n): it shows whether a response
// belongs to its request and is long enough to need several writes.
const nodeServer = `
const http = require('http');
const port = Number(process.argv[1]);
const srv = http.createServer((req, res) => {
  const n = Number(req.url.slice(1)) || 0;
  let body = 'node ' + n + '\n';
  for (let i = 0; i < 2000 + n * 100; i++) body += 'line ' + i + ' of ' + n + '\n';
  res.writeHead(200, {'Content-Type': 'text/plain'});
  res.end(body);
});
srv.listen(port, '127.0.0.1', () => console.log('listening ' + port));
process.on('SIGTERM', () => srv.close(() => process.exit(0)));
`

func nodeBody(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "node %d\n", n)
	for i := 0; i < 2000+n*100; i++ {
		fmt.Fprintf(&b, "line %d of %d\n", i, n)
	}
	return b.Bytes()
}

// TestIntegrationNodeHTTP serves generated bodies from a Node.js HTTP server and fetches them with curl,
// one request and then 8 concurrent ones, comparing every body.
func TestIntegrationNodeHTTP(t *testing.T) {
	lib := integrationLib(t)
	node := testutil.Program(t, "node", "nodejs")
	curl := testutil.Program(t, "curl", "curl")
	cmp := comparison{title: "curl against a Node.js HTTP server"}
	defer cmp.log(t)
	for _, m := range testutil.AllModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			srv := testutil.Start(t, "node", m.ServerEnv(lib), node, "-e", nodeServer, strconv.Itoa(port))
			testutil.WaitTCP(t, port, 30*time.Second, srv)
			dir := t.TempDir()
			base := fmt.Sprintf("http://127.0.0.1:%d/", port)

			res := runClient(t, m.ClientEnv(lib), 30*time.Second, curl, "-sS", "--fail", "--max-time", "20", base+"7")
			if !bytes.Equal(res.Stdout, nodeBody(7)) {
				t.Fatalf("single request: got %d bytes, want %d; first line %q", len(res.Stdout), len(nodeBody(7)),
					firstLine(res.Stdout))
			}

			args := []string{"-sS", "--fail", "--max-time", "30", "--parallel", "--parallel-max", "8"}
			for n := 0; n < 8; n++ {
				args = append(args, base+strconv.Itoa(n), "-o", filepath.Join(dir, "body"+strconv.Itoa(n)))
			}
			start := time.Now()
			runClient(t, m.ClientEnv(lib), 60*time.Second, curl, args...)
			el := time.Since(start)
			for n := 0; n < 8; n++ {
				got, err := os.ReadFile(filepath.Join(dir, "body"+strconv.Itoa(n)))
				if err != nil {
					t.Fatalf("concurrent request %d: %v", n, err)
				}
				if !bytes.Equal(got, nodeBody(n)) {
					t.Fatalf("concurrent request %d: got %d bytes, want %d; first line %q", n, len(got),
						len(nodeBody(n)), firstLine(got))
				}
			}
			cmp.add(m, "8 concurrent requests %v", el.Round(time.Millisecond))
		})
	}
}

// TestIntegrationNodeHTTPRounds serves rounds of 8 concurrent curl requests from one Node.js HTTP
// server, so that the server closes connections and accepts new ones on the same numbers again and
// again. libuv closes a connection with syscall(SYS_close, fd): before the library interposed
// syscall(2), it missed those closes, kept the old connection behind the number, and a round hung
// in most runs (node asleep in epoll_wait, curl in poll, nothing queued in either kernel socket).
func TestIntegrationNodeHTTPRounds(t *testing.T) {
	lib := integrationLib(t)
	node := testutil.Program(t, "node", "nodejs")
	curl := testutil.Program(t, "curl", "curl")
	const rounds, parallel = 12, 8
	for _, m := range testutil.MainModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			srv := testutil.Start(t, "node", m.ServerEnv(lib), node, "-e", nodeServer, strconv.Itoa(port))
			testutil.WaitTCP(t, port, 30*time.Second, srv)
			dir := t.TempDir()
			base := fmt.Sprintf("http://127.0.0.1:%d/", port)
			for r := 0; r < rounds; r++ {
				args := []string{"-sS", "--fail", "--max-time", "10", "--parallel", "--parallel-max", strconv.Itoa(parallel)}
				for n := 0; n < parallel; n++ {
					args = append(args, base+strconv.Itoa(n), "-o", filepath.Join(dir, fmt.Sprintf("r%d-%d", r, n)))
				}
				runClient(t, m.ClientEnv(lib), 20*time.Second, curl, args...)
				for n := 0; n < parallel; n++ {
					got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r%d-%d", r, n)))
					if err != nil {
						t.Fatalf("round %d request %d: %v", r, n, err)
					}
					if !bytes.Equal(got, nodeBody(n)) {
						t.Fatalf("round %d request %d: got %d bytes, want %d; first line %q", r, n, len(got),
							len(nodeBody(n)), firstLine(got))
					}
				}
			}
		})
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
