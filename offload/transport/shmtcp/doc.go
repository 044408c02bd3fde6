// Package shmtcp is the shared-memory transport for TCP: one connected TCP socket between two
// goxio processes of one user on one host and network namespace, whose bytes flow through a
// connection segment of package offload/shm (two single-producer single-consumer byte rings)
// instead of the kernel's TCP stack. The kernel connection stays open: it carries the bytes sent
// before the switch, the wake-ups, and the liveness of the peer (EOF, RST).
//
// # Pairing
//
// Between a goxio connecting end and a goxio listener a connection pairs late, through the
// pairing table (late.go): the connecting end creates the segment (side 0) at its
// Params.PairAfter-th data call, the accepting end attaches (side 1) at its next data call after
// that; the bytes before went through the kernel and count in K. Otherwise (tests, a connection
// accepted after its listener went) both ends call OpenConn when the kernel connection is
// established (TCP.Established): the first creates the segment (side 0), the other attaches
// (side 1). Nothing is ever written to the kernel
// connection before the switch that the program did not send, so a non-goxio peer sees an ordinary
// connection. A creator whose peer never attaches withdraws (closes and unlinks its segment, and
// stays on the kernel for good) as soon as either
//   - it receives a kernel byte from the peer while the peer has not attached: a goxio peer
//     attaches in Established, before it can send anything, so the peer is not one of ours
//     (not for a late pairing: the table said who the peer is); or
//   - a data call or readiness check comes later than Params.AttachGrace after Established.
//
// # Switch-over, per direction
//
// The writer of side 0 switches (Conn.SwitchWrite with K, the bytes it sent through the kernel)
// at its first call after it saw the peer attached: that is its commitment, after which it never
// withdraws. Side 1 switches only after side 0 did (ReaderSwitch says so): a creator that
// withdraws has never switched, so side 1 sees its segment closed without a switch and goes back
// to the kernel too; nothing was ever written into a ring that nobody reads. A reader reads the
// kernel (never more than K bytes once K is known) until it read exactly K bytes, then the ring.
//
// The phases of each direction (kernel, up to K, ring, back; never for our writes) and every
// transition between them are in state.go.
//
// # Wake-ups
//
// After its own switch an end sends wake-ups as single bytes on the kernel connection, beyond K
// in its direction: the peer's sleeping reader (data) or writer (space) wakes in ppoll on its
// kernel socket, and so does the program's own poll or epoll on that fd. The reader drains wake
// bytes when its ring is empty; they are never data for the program.
//
// # Blocking
//
// A call that may block polls the ring (VMA_RX_POLL budget, spinning only after the reader's
// switch) and then sleeps in ppoll on its own duplicate of the kernel fd, honouring O_NONBLOCK,
// MSG_DONTWAIT, SO_RCVTIMEO, SO_SNDTIMEO and the program's signal handlers (EINTR, SA_RESTART)
// like the kernel's blocking calls. Close wakes such sleepers (shutdown(SHUT_RD) on the kernel
// socket, which sends nothing to the peer): a woken receive returns 0, a woken send EPIPE.
//
// Library code starts no goroutine and uses no timer, os.File or net: it runs on the program's
// threads inside the program.
package shmtcp
