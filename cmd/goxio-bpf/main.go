// Command goxio-bpf compiles a tcpdump filter expression (pcap-filter(7)) to classic BPF for
// Ethernet frames with libpcap, the reference implementation, for `goxio capture`:
//
//	goxio-bpf SNAPLEN EXPRESSION
//
// It prints the program one instruction per line, "code jt jf k" in decimal (tcpdump -ddd's lines
// without its count), or libpcap's message on stderr with exit status 1.
//
// It is a command of its own so that goxio, which `goxio run` starts before every program it runs,
// is a static binary: linking libpcap through cgo made each goxio start load a dozen shared
// libraries and start a cgo runtime (~1.5 ms of each `goxio run`).
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: goxio-bpf SNAPLEN EXPRESSION")
		return 2
	}
	snap, err := strconv.Atoi(args[0])
	if err != nil || snap <= 0 {
		fmt.Fprintf(stderr, "goxio-bpf: snap length %q: want a positive number\n", args[0])
		return 2
	}
	ins, err := pcap.CompileBPFFilter(layers.LinkTypeEthernet, snap, args[1])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, in := range ins {
		fmt.Fprintf(stdout, "%d %d %d %d\n", in.Code, in.Jt, in.Jf, in.K)
	}
	return 0
}
