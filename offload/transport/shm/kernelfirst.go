package shm

import (
	"net/netip"

	ring "github.com/goxio/goxio/offload/shm"
)

// A socket the preload library served in its early phase (shim/preload/early.c: a UDP socket
// that sent to a goxio receiver through the kernel, as a socket per request does) may send to
// the same receiver through a ring once the engine has it. The receiver reads its rings first
// and its kernel socket every so often, so a ring datagram could overtake the socket's last
// kernel datagrams, which the kernel would have delivered in order. Those sends count as the
// socket's kernel sends (order.go): its first ring datagram to each destination after them is
// marked (offload/shm kindAfterKernel), and a receive that meets the mark takes the kernel
// socket's datagrams first (kernelFirst, olderFirst in lazy.go), as after an inbox published late.

// SentThroughKernel records that the socket sent through the kernel before the engine took it
// over (transport.KernelFirst), to dst; which destination does not matter here: the first ring
// datagram to every destination after it is marked. Its peers answered through the kernel too
// (it was in no directory): its receives take the kernel socket's datagrams first, as those of an
// inbox published late (lazy.go).
func (u *UDP) SentThroughKernel(netip.AddrPort) {
	u.kernelSent()
	u.kernelFirst.Store(true)
}

// afterKernel reports whether the datagram the inbox's last peek returned follows kernel
// datagrams of its sender that this receive has not looked for yet; kernelFirst is then set.
// The caller holds rxmu.
func (u *UDP) afterKernel(in *ring.Inbox) bool {
	if !in.TakeAfterKernel() {
		return false
	}
	u.kernelFirst.Store(true)
	return true
}
