package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
)

// bpfHelper is the command that compiles filters with libpcap (cmd/goxio-bpf). goxio itself does
// not link libpcap: it stays a static binary that `goxio run` starts in ~0.3 ms, where cgo and
// libpcap's dozen shared libraries cost ~1.5 ms more.
const bpfHelper = "goxio-bpf"

// findBPFHelper returns the path of goxio-bpf: next to goxio (the build directory), in ../lib/goxio
// relative to it (installed), or in $PATH. Tests set it.
var findBPFHelper = func() (string, error) {
	var tried []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		for _, c := range []string{filepath.Join(dir, bpfHelper), filepath.Join(dir, "..", "lib", "goxio", bpfHelper)} {
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				return c, nil
			}
			tried = append(tried, c)
		}
	}
	if p, err := exec.LookPath(bpfHelper); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (looked at %s and in $PATH)", bpfHelper, strings.Join(tried, ", "))
}

// compileFilter compiles a tcpdump expression (pcap-filter(7)) with libpcap, the reference
// implementation (through goxio-bpf), for Ethernet frames of up to snap bytes; "" compiles to
// nothing (every packet). The library runs the program on each packet; it never links libpcap itself.
func compileFilter(expr string, snap int) ([]bpf.RawInstruction, error) {
	if expr == "" {
		return nil, nil
	}
	helper, err := findBPFHelper()
	if err != nil {
		return nil, fmt.Errorf("compile filter %q: %w", expr, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helper, strconv.Itoa(snap), expr)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		if msg == "" || !errors.As(err, &exit) {
			msg = fmt.Sprintf("%s: %v %s", helper, err, msg)
		}
		return nil, fmt.Errorf("compile filter %q: %s", expr, msg)
	}
	raw, err := parseBPF(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("compile filter %q: %s: %w", expr, helper, err)
	}
	return raw, nil
}

// parseBPF reads goxio-bpf's output: one "code jt jf k" line per instruction.
func parseBPF(out []byte) ([]bpf.RawInstruction, error) {
	var raw []bpf.RawInstruction
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %q: want code jt jf k", n, sc.Text())
		}
		var v [4]uint64
		for i, bits := range []int{16, 8, 8, 32} {
			x, err := strconv.ParseUint(f[i], 10, bits)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			v[i] = x
		}
		raw = append(raw, bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	if len(raw) == 0 {
		return nil, errors.New("no instructions")
	}
	return raw, nil
}
