package tests

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestXDPZeroCopy runs tests/vmaapi/zxdp.c as a receiver on the AF_XDP transport, its sender a
// plain program across the veth pair: recvfrom_zcopy hands each datagram over where it lies in the
// UMEM (the iovec is in the "/memfd:goxio-umem" mapping and aliases it), held frames fill the
// socket's queue and the datagrams after them are dropped and counted as by a full receive
// buffer, the statistics show the zero-copy receives and the frames held while the program
// holds them, delivery resumes exact and in order after free_packets, and double, foreign and
// cross-socket frees are refused. Without the library, and with GOXIO_EXTRA_API=0 (the program's
// recvfrom path), the same exchange gives the same result lines.
func TestXDPZeroCopy(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zxdp")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", "zxdp.c"), bin, "-O2", "-Wall", "-Werror")
	results := []string{
		"1: 8 datagrams exact, held together",
		"2: the burst in order, intact while held",
		"3: 8 datagrams exact, in order",
	}
	const burst, queue = 400, 128 // zxdp.c's BURST; the transport's queue per socket
	for i, m := range []struct {
		name, mode string
		g          goxio
		extra      []string
	}{
		{"without the library", "none", kernelOnly, nil},
		{"AF_XDP", "xdp", underGoxio, nil},
		{"mask cleared", "cleared", underGoxio, []string{"GOXIO_EXTRA_API=0"}},
	} {
		t.Run(m.name, func(t *testing.T) {
			h := newXDPHarness(t, 1)
			port := strconv.Itoa(7300 + i)
			rx := h.run("zxdp receiver", h.tp.nsA, m.g, m.extra, bin, "recv", port, m.mode)
			rx.expect("READY", xdpWait)
			if m.g {
				h.waitSteered(rx)
			}
			tx := h.run("zxdp sender", h.tp.nsB, kernelOnly, nil, bin, "send", h.tp.addrA, port)
			if l := rx.expect("1: ", xdpWait); l != results[0] {
				t.Fatalf("%q, want %q", l, results[0])
			}
			held, err := strconv.Atoi(strings.TrimPrefix(rx.expect("HELD ", xdpWait), "HELD "))
			if err != nil {
				t.Fatal(err)
			}
			if m.mode == "xdp" {
				var sock *stats.SocketSnapshot
				for _, s := range processSockets(h.stats(rx.pid()), rx.pid()) {
					if s.Transport == stats.TransportXDP {
						sock = &s
					}
				}
				if sock == nil {
					t.Fatalf("no socket on the AF_XDP transport")
				}
				c := sock.Counters
				// the first part's 8 and the burst's, each once; the burst's all held now
				if c.RxZcopy != uint64(8+held) || c.RxHeld != uint64(held) {
					t.Errorf("statistics: %d zero-copy receives and %d held, want %d and %d", c.RxZcopy, c.RxHeld, 8+held, held)
				}
				if held > queue || c.RxDropPackets == 0 || uint64(held)+c.RxDropPackets > burst {
					t.Errorf("the held frames did not fill the queue: %d held, %d dropped of %d", held, c.RxDropPackets, burst)
				}
				t.Logf("%d frames held, %d datagrams dropped, %d received in all", held, c.RxDropPackets, c.RxPackets)
			}
			rx.say("go")
			for _, want := range results[1:] {
				if l := rx.expect(want[:3], xdpWait); l != want {
					t.Errorf("%q, want %q", l, want)
				}
			}
			rx.wait(xdpWait)
			tx.wait(xdpWait)
		})
	}
}
