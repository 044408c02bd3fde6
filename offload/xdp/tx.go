package xdp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Alloc fills frames with free TX frames, at most len(frames), and returns how many.
// Each Frame's Data is a whole UMEM frame (FrameSize bytes, zeroed or holding an
// earlier frame's bytes) that the caller fills with an Ethernet frame and shortens to
// its length, then passes to Transmit, or gives back unsent with Free. Completed
// transmissions are reaped first when the free list is short. 0 means every TX frame
// is in the kernel or held: wait (poll FD for POLLOUT) or transmit what is held.
func (s *Socket) Alloc(frames []Frame) int {
	u := s.umem
	if len(u.txFree) < len(frames) {
		s.Complete()
	}
	n := min(len(frames), len(u.txFree))
	for i := range n {
		addr := u.txFree[len(u.txFree)-1]
		u.txFree = u.txFree[:len(u.txFree)-1]
		u.txState[uint32(addr/u.frameSize)-u.rxFrames] = frameHeld
		frames[i] = Frame{Data: u.frameData(addr, uint32(u.frameSize)), addr: addr}
	}
	u.txHeld.Add(int64(n))
	return n
}

// Free gives allocated frames back unsent and clears them in frames. It returns how
// many it took back; frames the caller does not hold from Alloc are left alone.
func (s *Socket) Free(frames []Frame) int {
	u := s.umem
	n := 0
	for i := range frames {
		idx, ok := u.heldFrame(&frames[i], false)
		if !ok {
			continue
		}
		u.txState[idx-u.rxFrames] = frameFree
		u.txFree = append(u.txFree, uint64(idx)*u.frameSize)
		frames[i] = Frame{}
		n++
	}
	u.txHeld.Add(-int64(n))
	return n
}

// Transmit posts frames (from Alloc, each Data shortened to the length to send) on
// the TX ring, kicks the kernel when it asks for it, reaps completions and returns how
// many it posted: frames[:n] now belong to the kernel (and are cleared), frames[n:]
// are still the caller's (the TX ring is full: retry later, or Free them). A frame
// that is not an allocated TX frame the caller holds, or whose Data was moved or is
// empty, stops the batch with an error wrapping unix.EINVAL; so does a failed kick
// other than the kernel's "try again" answers (EAGAIN, EBUSY, ENOBUFS, ENETDOWN),
// after the frames were posted.
func (s *Socket) Transmit(frames []Frame) (int, error) {
	n, bad := s.Post(frames)
	err := s.kick()
	s.Complete()
	if bad != nil {
		return n, bad
	}
	return n, err
}

// Post posts frames on the TX ring as Transmit does, without the system call that
// makes the kernel send them: in copy mode (and with need_wakeup) they wait on the
// ring until Kick, Transmit, or a completion reap that finds them left behind. The
// caller batches several frames into one kick this way; it must kick them soon.
func (s *Socket) Post(frames []Frame) (int, error) {
	u := s.umem
	room := s.tx.free(uint32(min(len(frames), int(s.tx.size))))
	n := uint32(0)
	var bad error
	var bytes uint64
	for i := range frames {
		if n == room {
			break
		}
		f := &frames[i]
		idx, ok := u.heldFrame(f, false)
		if !ok || f.addr%u.frameSize != 0 || uint64(cap(f.Data)) != u.frameSize || len(f.Data) == 0 {
			bad = fmt.Errorf("xsk transmit %d/%d: frame %d is not an allocated frame with data: %w", s.ifindex, s.queue, i, unix.EINVAL)
			break
		}
		u.txState[idx-u.rxFrames] = frameKernel
		s.tx.setDescAt(s.tx.localProd+n, f.addr, uint32(len(f.Data)))
		bytes += uint64(len(f.Data))
		n++
		*f = Frame{}
	}
	if n > 0 {
		s.tx.submit(n)
		u.txHeld.Add(-int64(n))
		u.txKernel.Add(int64(n))
		s.counters.txPackets.Add(uint64(n))
		s.counters.txBytes.Add(bytes)
	}
	return int(n), bad
}

// Kick makes the kernel send the frames Post left on the TX ring (one sendto for up to
// the kernel's budget of 32 frames in copy mode) and reaps completions. It fails only
// as Transmit's kick does.
func (s *Socket) Kick() error {
	err := s.kick()
	s.Complete()
	return err
}

// maxKicks bounds the sendto calls of one kick (copy mode sends a budget of frames per
// call and answers EAGAIN while more remain).
const maxKicks = 64

// kick makes the kernel send what waits on the TX ring, when it asks for a system call
// (always in copy mode). Copy mode sends synchronously: kick repeats while frames remain
// and the kernel answers "try again", boundedly.
func (s *Socket) kick() error {
	for range maxKicks {
		if s.tx.pending() == 0 || (s.needWakeup && !s.tx.needWakeup()) {
			return nil
		}
		s.counters.txWakeups.Add(1)
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			if s.zeroCopy {
				return nil // the driver sends asynchronously
			}
		case unix.EAGAIN, unix.EBUSY:
			// More to send (copy mode's budget), or the driver is busy: go on, boundedly.
		case unix.ENOBUFS, unix.ENETDOWN:
			s.counters.txWakeupErrors.Add(1)
			return nil // no memory or link down: the frames stay on the ring for later
		default:
			s.counters.txWakeupErrors.Add(1)
			return fmt.Errorf("xsk transmit %d/%d: sendto: %w", s.ifindex, s.queue, e)
		}
	}
	return nil
}

// Complete reaps the completion ring: the TX frames the kernel has sent go back to
// the free list. It returns how many. Alloc and Transmit call it; call it directly to
// learn that transmissions finished. Entries that fail the bounds checks (not the
// start of a TX frame the kernel owns) are skipped and counted in Stats.CompInvalid.
func (s *Socket) Complete() int {
	u := s.umem
	avail := s.comp.available(u.txFrames)
	if avail == 0 {
		if s.tx.pending() != 0 {
			s.kick() // copy mode: frames left behind by an earlier budget
		}
		return 0
	}
	n := 0
	invalid := uint64(0)
	for i := range avail {
		addr := s.comp.addrAt(s.comp.localCons + i)
		t, ok := u.txFrame(addr)
		if !ok {
			invalid++
			continue
		}
		u.txState[t] = frameFree
		u.txFree = append(u.txFree, addr)
		n++
	}
	s.comp.release(avail)
	u.txKernel.Add(-int64(n))
	s.counters.txCompleted.Add(uint64(n))
	if invalid != 0 {
		s.counters.compInvalid.Add(invalid)
	}
	return n
}
