package xdp

// Where the descriptors live. A library preloaded into a program must keep its own descriptors
// out of the numbers the program expects to get (a program that opens a socket after the
// library attached expects the lowest free number) and out of the program's reach (close,
// dup2): its caller moves them with Adopt right after Attach or Open, before sharing the
// Program or Socket, and releases them (FDs, FD) before Close.

// Adopt hands each of the program's descriptors (program, link, maps) to place, which returns
// the descriptor to use from now on: the same one, or a duplicate it made (closing the old
// one). Call it right after Attach, before the Program is used by anything else.
func (p *Program) Adopt(place func(fd int) int) {
	fds := []*int{&p.prog, &p.link}
	if p.maps != nil {
		fds = append(fds, &p.maps.flows, &p.maps.groups, &p.maps.xsks)
	}
	for _, fd := range fds {
		if *fd >= 0 {
			*fd = place(*fd)
		}
	}
}

// FDs returns the program's open descriptors (program, link, maps).
func (p *Program) FDs() []int {
	var out []int
	fds := []int{p.prog, p.link}
	if p.maps != nil {
		fds = append(fds, p.maps.flows, p.maps.groups, p.maps.xsks)
	}
	for _, fd := range fds {
		if fd >= 0 {
			out = append(out, fd)
		}
	}
	return out
}

// Adopt hands the socket's descriptor to place, which returns the descriptor to use from now
// on (see Program.Adopt). Call it right after Open, before the Socket is used by anything else.
func (s *Socket) Adopt(place func(fd int) int) {
	if s.fd >= 0 {
		s.fd = place(s.fd)
	}
}
