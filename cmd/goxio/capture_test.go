package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goxio/goxio/offload/capture"
)

// Bad command lines get a clear message and exit status 2; nothing is attached.
func TestCaptureUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-k", dir}, "exactly one of -p, -n and --all"},
		{[]string{"-k", dir, "-p", "1", "--all"}, "exactly one of -p, -n and --all"},
		{[]string{"-k", dir, "-p", "x"}, "not a pid"},
		{[]string{"-k", dir, "--all", "--split", "port", "-w", "f"}, `--split "port"`},
		{[]string{"-k", dir, "--all", "--split", "src"}, "--split needs -w FILE"},
		{[]string{"-k", dir, "--all", "-C", "1", "-w", "-"}, "-G and -C need -w FILE"},
		{[]string{"-k", dir, "--all", "--pre", "3"}, "--pre needs --trigger"},
		{[]string{"-k", dir, "--all", "-c", "-1"}, "negative"},
		{[]string{"-k", dir, "--all", "udp port"}, `compile filter "udp port"`},
		{[]string{"-k", dir, "--all", "--trigger", "tcp[tcpflags] &"}, `compile filter "tcp[tcpflags] &"`},
		{[]string{"-k", "/tmp/x.%d", "--all"}, "give -k DIRECTORY"},
	} {
		var out, errb bytes.Buffer
		if code := cli(append([]string{"capture"}, tc.args...), &out, &errb, nil); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("goxio capture %q: status %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// A pid without a goxio statistics segment: nothing to capture, status 1.
func TestCaptureNoProcess(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli([]string{"capture", "-k", t.TempDir(), "-p", "1", "udp"}, &out, &errb, nil); code != 1 || !strings.Contains(errb.String(), "no goxio process") ||
		!strings.Contains(errb.String(), "pid 1: no goxio statistics segment") {
		t.Errorf("status %d, stderr %q", code, errb.String())
	}
}

func TestSplitName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"out.pcap", "239.1.2.3"}: "out.239.1.2.3.pcap", {"dir/x", "unicast"}: "dir/x.unicast", {"a.pcapng", ""}: "a.pcapng",
	} {
		if got := splitName(in[0], in[1]); got != want {
			t.Errorf("splitName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

func TestRingSize(t *testing.T) {
	for kb, want := range map[int]uint64{0: capture.MinRingSize, 64: 1 << 16, 65: 1 << 17, 4096: 1 << 22} {
		if got := (&captureOptions{bufferKB: kb}).ringSize(); got != want {
			t.Errorf("-B %d: ring %d, want %d", kb, got, want)
		}
	}
}
