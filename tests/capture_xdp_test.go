package tests

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestCaptureXDP (issue 18): goxio capture of a process whose UDP socket is served by AF_XDP
// records the frames of its RX ring (the data it receives) and of its TX ring (the
// acknowledgements it sends) exactly as tcpdump on the peer's end of the veth pair sees them on
// the wire: the same datagrams per flow, in order, same lengths and payloads, with valid checksums.
func TestCaptureXDP(t *testing.T) {
	h := newXDPHarness(t, 1)
	tp := h.tp
	tp.resolve(t) // the receiver's acknowledgements go on its TX ring from the first
	const n, port = 200, 7010
	dir := t.TempDir()
	wire, mine := filepath.Join(dir, "wire.pcap"), filepath.Join(dir, "goxio.pcap")
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal(err)
	}
	filter := "udp port " + strconv.Itoa(port)
	td := startBG(t, testutil.Env(""), ip, "netns", "exec", tp.nsB, testutil.Program(t, "tcpdump", "tcpdump"),
		"-i", tp.ifOf(tp.nsB), "-U", "-Z", "root", "-s", "65600", "-B", "32768", "-w", wire, filter)
	td.waitStderr(t, "listening on", 10*time.Second)

	rx := h.py("goxio rx", tp.nsA, underGoxio, nil, "rx", tp.addrA+":"+strconv.Itoa(port), "-n", strconv.Itoa(n), "--wait")
	rx.expect("ready", xdpWait)
	c := startBG(t, testutil.Env(""), testutil.Tool(t, "goxio"), "capture", "-k", h.statsDir, "-p", strconv.Itoa(rx.pid()), "-w", mine, filter)
	c.waitStderr(t, "goxio capture: attached to", 10*time.Second)
	tx := h.py("kernel tx", tp.nsB, kernelOnly, nil, "tx", tp.addrA+":"+strconv.Itoa(port), "-n", strconv.Itoa(n))
	tx.expect("sent", xdpWait)
	requireAll(t, "kernel to goxio", rxDone(t, rx, xdpWait), n, true)
	tot, proc := h.udpOf(rx.pid())
	ringRx, ringTx, _ := xdpRings(proc)
	c.stop(t)
	td.stopTcpdump(t)
	rx.exit(xdpWait)

	want, got := readPcap(t, wire), readPcap(t, mine)
	if tot.RxPackets != n || ringRx != n {
		t.Fatalf("goxio receiver: %d datagrams from the ring (%d frames on the RX ring), want %d: the capture would not show the AF_XDP path",
			tot.RxPackets, ringRx, n)
	}
	toRx := 0
	for _, p := range want {
		if p.Dst.Port() == port {
			toRx++
		}
	}
	if toRx != n {
		t.Fatalf("tcpdump on the wire saw %d datagrams to port %d, want %d", toRx, port, n)
	}
	if d := sameUDP(want, got); d != "" {
		t.Fatalf("goxio capture (%d packets) differs from the wire (%d packets): %s", len(got), len(want), d)
	}
	t.Logf("%d packets on the wire and in goxio capture (%d received on the RX ring, %d frames sent on the TX ring)",
		len(want), ringRx, ringTx)
	// The kernel sender's datagrams cross the veth with their checksum only begun (tcpdump on the
	// wire shows it "incorrect"); the capture shows them as a NIC's wire carries them.
	tsharkClean(t, mine)
}
