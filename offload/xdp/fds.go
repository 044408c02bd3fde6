package xdp

// Where the descriptors live. A library preloaded into a program must keep its own descriptors
// out of the numbers the program expects to get (a program that opens a socket after the
// library attached expects the lowest free number) and out of the program's reach (close,
// dup2). The Program's descriptors belong to cilium/ebpf objects and cannot be moved: its
// caller runs Attach while the low numbers are held (offload.OpenHigh) and marks FDs internal,
// releasing them before Close. A Socket's descriptor is the package's own: its caller moves it
// with Adopt right after Open.

// FDs returns the program's open descriptors (program, link, maps).
func (p *Program) FDs() []int {
	var out []int
	if p.prog != nil {
		out = append(out, p.prog.FD())
	}
	if l, ok := p.link.(interface{ FD() int }); ok && p.link != nil {
		out = append(out, l.FD())
	}
	if p.maps != nil {
		out = append(out, p.maps.fds()...)
	}
	return out
}

// Adopt hands the socket's descriptor to place, which returns the descriptor to use from now
// on (the same one, or a duplicate it made, closing the old one). Call it right after Open,
// before the Socket is used by anything else.
func (s *Socket) Adopt(place func(fd int) int) {
	if s.fd >= 0 {
		s.fd = place(s.fd)
	}
}
