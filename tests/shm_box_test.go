package tests

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmBoxRecv: plain receives (recvfrom, recv, read, recvmsg) of a burst on a ring socket take the
// datagrams the engine queued in the socket's box without entering the engine for each
// (shim/preload/box.c): tests/shm/boxrecv.c counts its calls into the engine around its
// receives, and checks that every datagram comes whole, in order, from the sender's address.
func TestShmBoxRecv(t *testing.T) {
	h := newShmHarness(t)
	bin := filepath.Join(t.TempDir(), "boxrecv")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "boxrecv.c"), bin, "-O2", "-Wall", "-ldl")
	const rounds, burst = 80, 200
	cmd := exec.Command(bin, strconv.Itoa(rounds), strconv.Itoa(burst))
	cmd.Env = h.env()
	res := testutil.Run(cmd, 60*time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("boxrecv: %v\nstdout:\n%s\nstderr:\n%s", res, res.Stdout, res.Stderr)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+) (\w+)=(-?\d+)$`).FindAllStringSubmatch(string(res.Stdout), -1) {
		n, _ := strconv.Atoi(m[3])
		out[m[1]+" "+m[2]] = n
	}
	t.Logf("boxrecv: %v", out)
	for _, k := range []string{"recvfrom", "recv", "read", "recvmsg"} {
		got, calls := out[k+" got"], out[k+" calls"]
		if got != rounds/4*burst || out[k+" bad"] != 0 {
			t.Errorf("%s: %d datagrams, %d not the next one whole; want %d, 0", k, got, out[k+" bad"], rounds/4*burst)
		}
		if calls < 0 {
			t.Fatal("goxio_thread_engine_calls not found in the library")
		}
		// A box holds 32 records: a receive that enters the engine takes one datagram and
		// queues up to 32, so about one call in 33; a quarter leaves room for a sender that
		// was slow to fill the ring.
		if calls*4 > got {
			t.Errorf("%s: %d engine calls for %d datagrams; want at most a quarter", k, calls, got)
		}
	}
	h.requireClean()
}
