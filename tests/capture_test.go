package tests

import (
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

func itoa(n int) string { return strconv.Itoa(n) }

// goxio capture (issue 18): the same traffic under tcpdump -i lo with the fast paths off and
// under goxio capture with them on gives the same packets.

const captureRound = 60 // datagrams in one round of capgen udp

// kernelRound runs one round of capgen udp without goxio under tcpdump -i lo (udp only).
func kernelRound(t *testing.T, h *shmHarness, gen, file string) []wirePacket {
	td := startTcpdump(t, file, "udp")
	p := h.start("capgen", testutil.Env(""), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	p.say("go")
	p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
	p.exit(10 * time.Second)
	time.Sleep(200 * time.Millisecond) // tcpdump -U writes each packet; give it the last ones
	td.stop(t)
	return readPcap(t, file)
}

func TestCaptureUDPSameAsTcpdump(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	want := kernelRound(t, h, gen, dir+"/kernel.pcap")
	if len(want) != captureRound {
		t.Fatalf("tcpdump saw %d datagrams, want %d", len(want), captureRound)
	}
	p := h.start("capgen", h.env(), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	for _, format := range []string{"pcap", "pcapng"} {
		file := dir + "/goxio." + format
		args := []string{"-p", itoa(p.pid()), "-w", file}
		if format == "pcapng" {
			args = append(args, "--pcapng")
		}
		c := startCapture(t, h, append(args, "udp")...)
		lo := startTcpdump(t, file+".lo", "udp and not ip multicast") // the kernel sees no unicast datagram
		p.say("go")
		p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
		c.stop(t)
		time.Sleep(100 * time.Millisecond)
		lo.stop(t)
		if k := readPcap(t, file+".lo"); len(k) != 0 {
			t.Fatalf("%d unicast datagrams went through the kernel, want none (offloaded): %v", len(k), k[0])
		}
		got := readPcap(t, file)
		if d := sameUDP(want, got); d != "" {
			t.Fatalf("%s: %s", format, d)
		}
		tsharkClean(t, file)
		if format == "pcapng" && (len(got) == 0 || got[0].Comment == "") {
			t.Fatalf("pcapng packets carry no comment: %+v", got[0])
		}
	}
	p.exit(10 * time.Second)
}
