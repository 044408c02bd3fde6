package offload

import (
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/iomux"
	"sync"
	"sync/atomic"
)

// FDTableSize is the number of fds the engine can serve; equal to GOXIO_FDT_SIZE in the shim.
const FDTableSize = sysc.MaxFD

const chunkBits = 12

type chunk [1 << chunkBits]atomic.Pointer[Socket]

// registry maps fd numbers to socket objects. Lookups are lock-free (two atomic loads); changes
// are made under mu, together with the matching change of the C-side table, so the two never
// disagree for longer than one mutation.
type registry struct {
	mu     sync.Mutex
	chunks [FDTableSize >> chunkBits]atomic.Pointer[chunk]
}

func (r *registry) get(fd int) *Socket {
	if uint(fd) >= FDTableSize {
		return nil
	}
	c := r.chunks[fd>>chunkBits].Load()
	if c == nil {
		return nil
	}
	return c[fd&(1<<chunkBits-1)].Load()
}

// put stores s for fd (s == nil clears it); the caller holds mu.
func (r *registry) put(fd int, s *Socket) {
	c := r.chunks[fd>>chunkBits].Load()
	if c == nil {
		if s == nil {
			return
		}
		c = new(chunk)
		r.chunks[fd>>chunkBits].Store(c)
	}
	c[fd&(1<<chunkBits-1)].Store(s)
}

// each calls f for every registered fd, in fd order; the caller holds mu.
func (r *registry) each(f func(fd int, s *Socket)) {
	for i := range r.chunks {
		c := r.chunks[i].Load()
		if c == nil {
			continue
		}
		for j := range c {
			if s := c[j].Load(); s != nil {
				f(i<<chunkBits|j, s)
			}
		}
	}
}

// muxHost is the engine as select, poll and epoll see it (iomux.Host).
type muxHost struct{ e *Engine }

// Socket is the iomux handle of fd's socket, or nil.
func (h muxHost) Socket(fd int) *iomux.Socket {
	if s := h.e.reg.get(fd); s != nil {
		return &s.mux
	}
	return nil
}

// Passthrough reports whether fd's socket was handed to the kernel for good.
func (h muxHost) Passthrough(fd int) bool {
	s := h.e.reg.get(fd)
	return s != nil && s.isPassthrough()
}

// TagTable is an FDTable that also gives the tag data of inner epoll fds.
type TagTable interface {
	FDTable
	Tag(fd int) uint64
}

// Internal marks one of the library's fds internal and returns its tag.
func (h muxHost) Internal(fd int) (uint64, bool) {
	tt, ok := h.e.cfg.Table.(TagTable)
	if !ok {
		return 0, false
	}
	tt.Set(fd, FlagInternal)
	return tt.Tag(fd), true
}

// Epoll marks a program epoll fd whose set holds ring sockets.
func (h muxHost) Epoll(epfd int) { h.e.cfg.Table.Set(epfd, FlagWatch|FlagEpoll) }

// Forget clears fd in the C-side table.
func (h muxHost) Forget(fd int) { h.e.cfg.Table.Set(fd, 0) }
