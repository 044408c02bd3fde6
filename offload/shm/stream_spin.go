package shm

import "sync/atomic"

// Spinners is how many SpinBegin marks our reading direction holds now (this process's threads
// and pollers that said they look at the ring without being woken). A reader about to sleep
// that finds marks of others must not count on a wake-up unless it holds a sleeper's bias
// (SleepBegin): the writer skips it while marks are held and nobody sleeps.
func (c *Conn) Spinners() int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0
	}
	s := atomic.LoadInt32(c.rx.spinners)
	if s >= SleeperBias/2 {
		s -= SleeperBias
	}
	return int(max(s, 0))
}

// SleeperBias is what SleepBegin adds to a direction's spinners word: a writer that finds the
// word at SleeperBias/2 or more asks for a data wake-up whatever the SpinBegin marks (the low
// part of the word). A connection's reader threads that sleep in the kernel (a blocking
// receive, select, poll, epoll_wait) hold one bias between them (shmtcp's Sleep), so that an
// epoll set's awake marks, kept while the thread that waits on it runs the program, do not keep
// the wake-up from another thread asleep on the connection.
const SleeperBias = 1 << 20

// SleepBegin tells the peer's writer that a reader thread of ours sleeps in the kernel on this
// connection: it asks for data wake-ups whatever the marks. A read-modify-write, so a barrier
// before the sleeper's last look at the ring (the Dekker pair of stream_wake.go, with the
// writer's tail before its spinners load). Pair every SleepBegin with a SleepEnd.
func (c *Conn) SleepBegin() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.AddInt32(c.rx.spinners, SleeperBias)
	}
}

// SleepEnd undoes one SleepBegin.
func (c *Conn) SleepEnd() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.AddInt32(c.rx.spinners, -SleeperBias)
	}
}
