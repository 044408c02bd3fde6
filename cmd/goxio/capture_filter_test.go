package main

import (
	"debug/elf"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

// Filters compile through goxio-bpf to libpcap's program; libpcap's message comes back for a bad one.
func TestCompileFilter(t *testing.T) {
	prog, err := compileFilter("udp", 262144)
	if err != nil {
		t.Fatal(err)
	}
	// Ethernet: the first instruction loads the EtherType, the last returns 0 (no match).
	if len(prog) < 4 || prog[0] != (bpf.RawInstruction{Op: 0x28, K: 12}) || prog[len(prog)-1] != (bpf.RawInstruction{Op: 0x6, K: 0}) {
		t.Errorf("udp compiles to %v", prog)
	}
	snap, err := compileFilter("", 100)
	if err != nil || snap != nil {
		t.Errorf(`"" compiles to %v, %v; want nothing`, snap, err)
	}
	if _, err := compileFilter("udp port", 100); err == nil || !strings.Contains(err.Error(), `compile filter "udp port": `) ||
		!strings.Contains(err.Error(), "syntax error") {
		t.Errorf("bad filter: %v", err)
	}
}

func TestParseBPF(t *testing.T) {
	got, err := parseBPF([]byte("40 0 0 12\n6 0 0 262144\n"))
	if err != nil || len(got) != 2 || got[1] != (bpf.RawInstruction{Op: 6, K: 262144}) {
		t.Errorf("parseBPF = %v, %v", got, err)
	}
	for _, bad := range []string{"", "40 0 0\n", "40 0 0 x\n", "70000 0 0 1\n", "1 256 0 1\n"} {
		if got, err := parseBPF([]byte(bad)); err == nil {
			t.Errorf("parseBPF(%q) = %v, want an error", bad, got)
		}
	}
}

// goxio (the C front end) and goxio-tool are static binaries: `goxio run` starts before every
// program it runs, and the loader's work (libc; for the tool cgo and libpcap's dozen libraries,
// ~1.5 ms) would be paid each time. Only goxio-bpf links libpcap.
func TestGoxioIsStatic(t *testing.T) {
	for _, bin := range []string{tools.goxio, tools.tool} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: something made it link libc dynamically", bin)
			}
		}
		f.Close()
	}
}
