package shm

import "sync/atomic"

// Spinners is how many SpinBegin marks our reading direction holds now (this process's threads
// and pollers that said they look at the ring without being woken). A reader about to sleep
// that finds marks of others must not count on a wake-up: the writer skips it while marks are
// held.
func (c *Conn) Spinners() int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0
	}
	return int(atomic.LoadInt32(c.rx.spinners))
}
