package offload

import (
	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// A fork shares every socket with the child, which never enters Go and so cannot read rings:
// before the fork the engine sends its shared-memory sockets back to the kernel for good, and
// what their rings held goes into a spill region both processes read (shim/spill.c, the layout
// is written there), so a datagram that was waiting when the program forked is received once, by
// whichever process asks first, as from the kernel socket they share.

// SpillTable is the C-side table that learns the spill region of an fd.
type SpillTable interface {
	SetSpill(fd int, region uintptr)
}

// BeforeFork hands every ring socket back to the kernel and spills its ring datagrams
// (called in the parent just before fork or daemon).
func (e *Engine) BeforeFork(t SpillTable) {
	fdsOf := map[*Socket][]int{}
	var order []*Socket
	e.reg.mu.Lock()
	e.reg.each(func(fd int, s *Socket) {
		if _, ok := fdsOf[s]; !ok {
			order = append(order, s)
		}
		fdsOf[s] = append(fdsOf[s], fd)
	})
	e.reg.mu.Unlock()
	for _, s := range order {
		e.sendBack(s, fdsOf[s], t, transport.ReasonForkedChild, "fork: the child shares the socket")
	}
	e.xdpBeforeFork()
}

// sendBack has the ring socket s, whose fds are fds, stop using its rings for good (a connection
// goes back to the kernel connection or never pairs, a datagram socket hands its datagrams over
// and goes back to the kernel with the reason r): what its rings held goes into a spill region
// its fds read first (t learns it).
func (e *Engine) sendBack(s *Socket, fds []int, t SpillTable, r transport.Reason, why string) {
	u := s.rings()
	if u == nil || len(fds) == 0 {
		return
	}
	recs, back := u.Fork(fds[0])
	if !back {
		return
	}
	var region []byte
	if len(recs) > 0 {
		var err error
		if region, err = udpcall.BuildSpill(recs); err != nil {
			e.log.Warn("datagrams waiting in rings are lost", zap.Int("fd", fds[0]),
				zap.Int("datagrams", len(recs)), zap.Error(err))
		} else {
			// Before the socket goes back: a receive of ours that sees it back in the
			// kernel sees the region too, and never sleeps in the kernel socket while
			// the region holds its datagram.
			u.SetSpill(region)
		}
	}
	e.giveUp(s, fds[0], r, why)
	if region == nil {
		return
	}
	for _, fd := range fds {
		t.SetSpill(fd, regionAddr(region))
	}
	e.log.Debug("ring datagrams spilled", zap.Int("fd", fds[0]), zap.Int("datagrams", len(recs)))
}
