package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// Helpers of the goxio capture tests: a private network namespace (tcpdump -i lo must see only
// the test's traffic), the traffic generator, tcpdump and goxio capture runs, pcap reading.

// captureNetEnv marks a test binary already re-run inside its own network namespace.
const captureNetEnv = "CAPTURE_TEST_NETNS"

// captureNet makes sure the test runs in a network namespace of its own, with lo up and a
// multicast route on it: it re-runs the test under `unshare --net` and returns true (the caller
// returns, the re-run's result is the test's); in the re-run it sets lo up and returns false.
func captureNet(t *testing.T) bool {
	t.Helper()
	if os.Getenv(captureNetEnv) == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(testutil.Program(t, "unshare", "util-linux"), "--net", exe, "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), captureNetEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a private network namespace:\n%s", testutil.Tail(string(out), 20000))
		if err != nil {
			t.Fatalf("the test failed in its network namespace: %v", err)
		}
		return true
	}
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"link", "set", "lo", "multicast", "on"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if out, err := exec.Command("ip", "route", "replace", "224.0.0.0/4", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("multicast route: %v: %s", err, out)
	}
	return false
}

// capgen compiles tests/capture/capgen.c once per test.
func capgen(t *testing.T, h *shmHarness) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(h.udp), "capgen")
	if _, err := os.Stat(out); err != nil {
		testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "capture", "capgen.c"), out, "-O2", "-Wall", "-pthread")
	}
	return out
}

// bgProc is a background program whose stderr the test watches (tcpdump, goxio capture).
type bgProc struct {
	cmd    *exec.Cmd
	stderr testutil.SyncBuffer
	stdout testutil.SyncBuffer
	done   chan struct{}
}

func startBG(t *testing.T, env []string, path string, args ...string) *bgProc {
	t.Helper()
	p := &bgProc{cmd: exec.Command(path, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stderr, p.cmd.Stdout = &p.stderr, &p.stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s %v stderr:\n%s", path, args, testutil.Tail(p.stderr.String(), 4000))
		}
	})
	return p
}

// waitStderr waits until the program's stderr holds s.
func (p *bgProc) waitStderr(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(p.stderr.String(), s); time.Sleep(10 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("%s ended before %q:\n%s", p.cmd.Path, s, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within %v:\n%s", p.cmd.Path, s, timeout, p.stderr.String())
		}
	}
}

// stopTcpdump stops tcpdump once the kernel handed it every packet: its buffer's blocks are
// handed over when full or after a second.
func (p *bgProc) stopTcpdump(t *testing.T) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	p.stop(t)
}

// stop sends SIGINT and waits for the program's end; it requires exit status 0.
func (p *bgProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}

func (p *bgProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not end", p.cmd.Path)
	}
	if !p.cmd.ProcessState.Success() {
		t.Fatalf("%s: %v:\n%s", p.cmd.Path, p.cmd.ProcessState, p.stderr.String())
	}
}

// startCapture starts goxio capture with args and waits until it attached.
func startCapture(t *testing.T, h *shmHarness, args ...string) *bgProc {
	t.Helper()
	p := startBG(t, testutil.Env(""), testutil.Tool(t, "goxio"), append([]string{"capture", "-k", h.statsDir}, args...)...)
	p.waitStderr(t, "goxio capture: attached to", 10*time.Second)
	return p
}

// startTcpdump starts tcpdump -i lo writing file and waits until it listens.
func startTcpdump(t *testing.T, file string, expr ...string) *bgProc {
	t.Helper()
	args := append([]string{"-i", "lo", "-U", "-Z", "root", "-s", "65600", "-B", "32768", "-w", file}, expr...)
	p := startBG(t, testutil.Env(""), testutil.Program(t, "tcpdump", "tcpdump"), args...)
	p.waitStderr(t, "listening on", 10*time.Second)
	return p
}

// wirePacket is what the comparisons look at: addresses, ports, protocol, lengths and payload.
type wirePacket struct {
	Src, Dst netip.AddrPort
	Proto    string
	OrigLen  int
	CapLen   int
	Payload  []byte
	Comment  string
	TCPSeq   uint32
}

func (p wirePacket) String() string {
	return fmt.Sprintf("%s %v > %v len %d payload %d", p.Proto, p.Src, p.Dst, p.OrigLen, len(p.Payload))
}

// readPcap reads a pcap or pcapng file's IPv4 UDP and TCP packets.
func readPcap(t *testing.T, path string) []wirePacket {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var next func() ([]byte, gopacket.CaptureInfo, []string, error)
	if r, err := pcapgo.NewReader(f); err == nil {
		next = func() ([]byte, gopacket.CaptureInfo, []string, error) {
			d, ci, err := r.ReadPacketData()
			return d, ci, nil, err
		}
	} else {
		f.Seek(0, io.SeekStart)
		ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatalf("%s: neither pcap nor pcapng: %v", path, err)
		}
		next = func() ([]byte, gopacket.CaptureInfo, []string, error) {
			d, ci, opts, err := ng.ReadPacketDataWithOptions()
			return d, ci, opts.Comments, err
		}
	}
	var out []wirePacket
	for {
		data, ci, comments, err := next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		var src, dst netip.Addr
		if ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip != nil {
			src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
			dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		} else if ip6, _ := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ip6 != nil {
			src, _ = netip.AddrFromSlice(ip6.SrcIP)
			dst, _ = netip.AddrFromSlice(ip6.DstIP)
		} else {
			continue
		}
		w := wirePacket{OrigLen: ci.Length, CapLen: ci.CaptureLength, Comment: strings.Join(comments, ";")}
		switch l4 := pkt.TransportLayer().(type) {
		case *layers.UDP:
			w.Proto, w.Src, w.Dst, w.Payload = "udp", netip.AddrPortFrom(src, uint16(l4.SrcPort)), netip.AddrPortFrom(dst, uint16(l4.DstPort)), l4.Payload
		case *layers.TCP:
			w.Proto, w.Src, w.Dst, w.Payload, w.TCPSeq = "tcp", netip.AddrPortFrom(src, uint16(l4.SrcPort)), netip.AddrPortFrom(dst, uint16(l4.DstPort)), l4.Payload, l4.Seq
		default:
			continue
		}
		out = append(out, w)
	}
}

// flows groups packets by (protocol, source, destination), in order.
func flows(pkts []wirePacket) map[string][]wirePacket {
	m := map[string][]wirePacket{}
	for _, p := range pkts {
		k := p.Proto + " " + p.Src.String() + " > " + p.Dst.String()
		m[k] = append(m[k], p)
	}
	return m
}

// sameUDP compares two captures flow by flow: the same datagrams in the same order, same lengths
// and payloads. It returns a description of the first difference, "" when none.
func sameUDP(want, got []wirePacket) string {
	fw, fg := flows(want), flows(got)
	for k, w := range fw {
		g := fg[k]
		if len(g) != len(w) {
			return fmt.Sprintf("flow %s: %d packets, want %d", k, len(g), len(w))
		}
		for i := range w {
			if w[i].OrigLen != g[i].OrigLen || !bytes.Equal(w[i].Payload, g[i].Payload) {
				return fmt.Sprintf("flow %s packet %d: %v, want %v", k, i, g[i], w[i])
			}
		}
	}
	for k, g := range fg {
		if _, ok := fw[k]; !ok {
			return fmt.Sprintf("flow %s (%d packets) not in the reference", k, len(g))
		}
	}
	return ""
}

// tsharkClean requires tshark to read a file without a warning (and with valid checksums).
func tsharkClean(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(testutil.Program(t, "tshark", "tshark"), "-r", path, "-V",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, stderr.String())
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "Running as user \"root\"") {
			t.Fatalf("tshark -r %s warns: %s", path, stderr.String())
		}
	}
	for _, bad := range []string{"Malformed", "[Checksum Status: Bad]", "Expert Info (Warning", "Expert Info (Error"} {
		if i := bytes.Index(out, []byte(bad)); i >= 0 {
			t.Fatalf("tshark -r %s: %q:\n%s", path, bad, testutil.Tail(string(out[:i+200]), 3000))
		}
	}
}
