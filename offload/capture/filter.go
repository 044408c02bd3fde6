package capture

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// program is a classic BPF program (libpcap's compilation of a tcpdump expression) ready to run
// on packets with golang.org/x/net/bpf's interpreter, which checks every load against the
// packet's length as the kernel does.
type program struct {
	vm *bpf.VM
	// reach is how many leading bytes of a packet the program can read: only those are copied
	// before it runs (the rest of the buffer it is given is never read); -1: the whole packet.
	reach int
}

// newProgram validates raw instructions; none: a nil program (every packet matches).
func newProgram(raw []bpf.RawInstruction) (*program, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	ins := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		ins[i] = r.Disassemble()
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		return nil, fmt.Errorf("capture program: %w", err)
	}
	return &program{vm: vm, reach: reach(ins)}, nil
}

// reach computes how far into a synthesized packet the program's loads can go: absolute loads
// by their offset, indirect loads by the largest value the X register can hold (the IP header
// length from LoadMemShift: 20 for the IPv4 header at offset 14, which frame.go writes without
// options, else up to 60; constants); X loaded from computed values (TAX, scratch) means
// anywhere. Whole frames (AF_XDP) are not synthesized: they are given to the programs whole.
func reach(ins []bpf.Instruction) int {
	maxX, direct, indirect := 0, 0, 0
	for _, in := range ins {
		switch i := in.(type) {
		case bpf.LoadAbsolute:
			direct = max(direct, int(i.Off)+i.Size)
		case bpf.LoadMemShift:
			direct = max(direct, int(i.Off)+1)
			if i.Off == EthLen {
				maxX = max(maxX, IPLen)
			} else {
				maxX = max(maxX, 60)
			}
		case bpf.LoadIndirect:
			indirect = max(indirect, int(i.Off)+i.Size)
		case bpf.LoadConstant:
			if i.Dst == bpf.RegX {
				maxX = max(maxX, int(i.Val))
			}
		case bpf.TAX:
			return -1
		case bpf.LoadScratch:
			if i.Dst == bpf.RegX {
				return -1
			}
		case bpf.RawInstruction:
			return -1
		}
	}
	if indirect > 0 {
		if maxX > MaxSnapLen {
			return -1
		}
		direct = max(direct, maxX+indirect)
	}
	return direct
}

// match runs the program on a packet; a nil program matches everything.
func (p *program) match(pkt []byte) bool {
	if p == nil {
		return true
	}
	n, err := p.vm.Run(pkt)
	return err == nil && n > 0
}
