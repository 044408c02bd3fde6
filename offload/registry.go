package offload

import (
	"sync"
	"sync/atomic"
)

// FDTableSize is the number of fds the engine can serve; equal to GOXIO_FDT_SIZE in the shim.
const FDTableSize = 1 << 20

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
