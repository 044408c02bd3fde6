package shm

import "errors"

// Sentinel errors of stream connections, next to the package's shared ones (ErrNoSpace,
// ErrFull, ErrEmpty, ErrCorrupt, ErrClosed). The data path returns them bare (no allocation);
// the set-up path wraps them with an operation prefix: test with errors.Is.
var (
	// ErrReset: the peer aborted the connection (Conn.Abort): unread data is discarded and every
	// further Read, Peek and Write fails with it (ECONNRESET).
	ErrReset = errors.New("shm: connection reset by peer")
	// ErrPeerClosed: Write after the peer closed its end (Conn.Close): nobody will read (EPIPE).
	ErrPeerClosed = errors.New("shm: peer closed")
	// ErrNotSwitched: Write before SwitchWrite told the reader how many bytes went through the
	// kernel first.
	ErrNotSwitched = errors.New("shm: write before SwitchWrite")
)
