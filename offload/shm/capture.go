package shm

// PeekSender is the pid of the process whose ring the last successful Peek read (0 after an
// unsuccessful one), for capture records.
func (in *Inbox) PeekSender() int {
	if in.bx.peeked {
		return in.bx.ents[in.bx.frontIdx].r.pid
	}
	if in.peekRing == nil {
		return 0
	}
	return in.peekRing.pid
}
