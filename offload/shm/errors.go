package shm

import (
	"errors"

	"github.com/goxio/goxio/internal/shmseg"
)

// Sentinel errors; the package wraps them with an operation prefix, so test with errors.Is.
var (
	// ErrNoSpace: the file system holding the segments is full (ENOSPC or EDQUOT at creation).
	// It is internal/shmseg's, which every segment of the library uses.
	ErrNoSpace = shmseg.ErrNoSpace
	// ErrFull: no free slot in the inbox (DialInbox), or the datagram does not fit in the ring
	// (Send, which counts a drop).
	ErrFull = errors.New("shm: full")
	// ErrEmpty: no ring of the inbox holds a datagram.
	ErrEmpty = errors.New("shm: empty")
	// ErrTooBig: payload above MaxPayload bytes or name above MaxName bytes.
	ErrTooBig = errors.New("shm: datagram too big")
	// ErrCorrupt: a segment does not validate (bad magic, version, size, owner or indices).
	ErrCorrupt = errors.New("shm: corrupt segment")
	// ErrClosed: the inbox was closed by its owner, the receiver detached our ring, or the
	// Outlet or Inbox itself was closed.
	ErrClosed = errors.New("shm: closed")
	// ErrNotHeld: Release of a handle that names no record held now (never given out, freed
	// already, or released with the inbox).
	ErrNotHeld = errors.New("shm: no such held record")
)
