package main

import (
	"fmt"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
	"golang.org/x/net/bpf"
)

// compileFilter compiles a tcpdump expression (pcap-filter(7)) with libpcap, the reference
// implementation, for Ethernet frames of up to snap bytes; "" compiles to nothing (every packet).
// The library runs the program on each packet; it never links libpcap itself.
func compileFilter(expr string, snap int) ([]bpf.RawInstruction, error) {
	if expr == "" {
		return nil, nil
	}
	ins, err := pcap.CompileBPFFilter(layers.LinkTypeEthernet, snap, expr)
	if err != nil {
		return nil, fmt.Errorf("compile filter %q: %w", expr, err)
	}
	raw := make([]bpf.RawInstruction, len(ins))
	for i, in := range ins {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return raw, nil
}
