package shm

import ring "github.com/goxio/goxio/offload/shm"

// The receive buffer of a group member. A feed's subscriber gets bursts: the publisher sends
// while the subscriber waits for a CPU (and a publisher that waited for one catches up in a
// burst), and what the buffer cannot hold is lost. The kernel's default SO_RCVBUF holds about
// 300 small datagrams; a member that kept the default gets its ring's capacity instead, and a
// sender's ring to a member holds mcRingBytes (8192 datagrams of up to 88 bytes), so the member
// rides out scheduling gaps some 25 times as long. SO_RCVBUF set by the program is honoured as
// for any socket (setLimit): a program that asks for a small buffer, to bound its latency, gets
// it. getsockopt(SO_RCVBUF) reads the kernel socket's value either way; only the losses differ,
// fewer.

// mcRingBytes is the data capacity of a sender's ring to a group member (at least the
// transport's ring size): memory of the sender's for each member it serves, reserved when it
// first sends to the member.
const mcRingBytes = 1 << 20

// applyLimit gives the inbox the limit senders honour: the ring's capacity (0) for a member of a
// group with the default SO_RCVBUF, the one SO_RCVBUF gives otherwise.
func (u *UDP) applyLimit(in *ring.Inbox) {
	if !u.rcvbufSet.Load() && u.joinSnap.Load() != nil {
		in.SetLimit(0)
		return
	}
	if v := u.kernelLimit.Load(); v > 0 {
		in.SetLimit(int(v))
	}
}
