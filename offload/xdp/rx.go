package xdp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Receive fills frames with the frames waiting on the RX ring, at most len(frames),
// and returns how many; it never blocks (Wait, or poll on FD, sleeps until frames
// arrive). Each Frame's Data aliases UMEM and stays valid until the frame is given back
// with Release; a frame not given back is lost to the kernel's receive path, so release
// them promptly. Descriptors that fail the bounds checks (outside the RX pool, longer
// than a frame, for a frame the kernel does not own) are skipped and counted in
// Stats.RxInvalid.
func (s *Socket) Receive(frames []Frame) int {
	want := uint32(min(len(frames), int(s.rx.size)))
	avail := s.rx.available(want)
	if avail == 0 {
		if s.needWakeup && s.fill.needWakeup() {
			// The driver waits for a system call before it takes frames from the fill ring
			// again (zero-copy mode); recvfrom with MSG_DONTWAIT is that call.
			s.counters.rxWakeups.Add(1)
			unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		}
		return 0
	}
	u := s.umem
	n, bytes := 0, uint64(0)
	invalid := uint64(0)
	for i := range avail {
		addr, length := s.rx.descAt(s.rx.localCons + i)
		idx, ok := u.rxFrame(addr, length)
		if !ok {
			invalid++
			continue
		}
		u.rxState[idx] = frameHeld
		frames[n] = Frame{Data: u.frameData(addr, length), addr: addr}
		n++
		bytes += uint64(length)
	}
	s.rx.release(avail)
	u.rxHeld.Add(int64(n))
	s.counters.rxPackets.Add(uint64(n))
	s.counters.rxBytes.Add(bytes)
	if invalid != 0 {
		s.counters.rxInvalid.Add(invalid)
	}
	return n
}

// Release gives received frames of this socket back to the kernel (the fill ring) and
// clears them in frames. It returns how many it took back: a Frame that is not a received frame the
// caller holds (zero, released twice, allocated for transmission) is left alone.
func (s *Socket) Release(frames []Frame) int {
	u := s.umem
	// The fill ring has room for the whole RX pool, so every held frame fits.
	room := s.fill.free(u.rxFrames)
	n := uint32(0)
	for i := range frames {
		idx, ok := u.heldFrame(&frames[i], true)
		if !ok || n == room {
			continue
		}
		u.rxState[idx] = frameKernel
		s.fill.setAddrAt(s.fill.localProd+n, uint64(idx)*u.frameSize)
		n++
		frames[i] = Frame{}
	}
	if n > 0 {
		s.fill.submit(n)
		u.rxHeld.Add(-int64(n))
	}
	return int(n)
}

// Wait sleeps until frames are waiting on the RX ring or timeoutMillis passes (-1:
// forever) and reports whether frames are waiting. A signal ends it early with
// (false, nil).
func (s *Socket) Wait(timeoutMillis int) (bool, error) {
	if s.rx.available(1) > 0 {
		return true, nil
	}
	pfd := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, timeoutMillis)
	if err == unix.EINTR {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("xsk wait %d/%d: %w", s.ifindex, s.queue, err)
	}
	return n > 0 && pfd[0].Revents&unix.POLLIN != 0, nil
}
