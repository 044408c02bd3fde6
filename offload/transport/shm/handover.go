package shm

import "golang.org/x/sys/unix"

// HandOver takes every datagram waiting in the socket's rings, in the order a receive would
// return them, as (source sockaddr, payload) pairs the caller owns: the engine spills them before
// a fork, then sends the socket back to the kernel. The inbox is sealed first: senders use the
// kernel from then on, and one in the middle of a send has published before the rings are read
// (a datagram put into a ring after the hand-over would never be read).
func (u *UDP) HandOver() [][2][]byte {
	if !u.enter() {
		return nil
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return nil
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	var out [][2][]byte
	u.spill.Begin() // ended by SetSpill or GiveUp
	u.kernelReadOff()
	in.Seal()
	in.Refresh()
	for len(out) < maxHandOver {
		name, data, err := in.Peek()
		if err != nil {
			break
		}
		var sab [unix.SizeofSockaddrInet6]byte
		if sa, src, group, mc := mcRecord(name, &sab); mc {
			if !u.admits(group, src) {
				in.Pop()
				continue
			}
			name = sa
		}
		out = append(out, [2][]byte{append([]byte(nil), name...), append([]byte(nil), data...)})
		in.Pop()
	}
	return out
}

// maxHandOver bounds the datagrams one hand-over takes (rings of 64 senders, full).
const maxHandOver = 1 << 20

// SetSpill gives the socket the region its ring datagrams were spilled to at a fork, before the
// socket goes back to the kernel (GiveUp): select, poll and epoll report the socket readable while
// the region holds datagrams; the receives are served from it by the C side, and the ones already
// inside the engine by spill.Take. Threads of ours asleep on the socket are woken to look at it
// (they marked themselves before their last look, which includes the region).
func (u *UDP) SetSpill(region []byte) {
	u.spill.Set(region)
	if u.sleepers.Load() == 0 {
		return
	}
	if in := u.inbox.Load(); in != nil && u.bell.Load() >= 0 {
		if r := u.env.ringerFD(); r >= 0 {
			ringBell(r, newBellAddr(in.Name()))
		}
	}
}
