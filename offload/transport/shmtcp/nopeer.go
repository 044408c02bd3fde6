package shmtcp

import "github.com/goxio/goxio/offload/transport"

var _ transport.Pairing = (*TCP)(nil)

// NoPeer tells a connecting socket that its peer is no goxio process (the engine found no goxio
// listener at the address it connected to): the connection never pairs, and every call goes to
// the kernel socket as it is, as after an Established that opened no segment. It does nothing
// once Established started.
func (t *TCP) NoPeer() {
	t.estmu.Lock()
	defer t.estmu.Unlock()
	if t.est.Load() == estNone {
		t.est.Store(estDone)
	}
}

// KernelForGood reports whether every call of the socket goes to the kernel socket as it is, now
// and later: establishment is over and the connection has no segment (it never paired, its
// segment was withdrawn, or both directions went back and the segment is closed). The engine
// then lets the program's calls go to libc directly.
func (t *TCP) KernelForGood() bool {
	return t.est.Load() == estDone && t.conn.Load() == nil
}
