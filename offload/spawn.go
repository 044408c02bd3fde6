package offload

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// A child started by posix_spawn (or system, popen) runs another program image: with goxio it
// loads its own engine, which does not know the sockets it inherited, so it uses them through
// the kernel. The kernel queues the datagrams of one socket, and of one receiver, in the order
// they were sent, whichever process sent them; a parent sending through a ring and a child
// through the kernel would lose that order at the receiver (which takes ring datagrams first),
// and a child receiving on an inherited socket would never see its ring datagrams. So before the
// spawn every ring socket the child inherits goes back to the kernel for good, as at a fork
// (sendBack). Sockets whose every fd is close-on-exec are not inherited and keep their rings.

// BeforeSpawn sends the ring sockets a spawned child inherits back to the kernel (called in the
// parent just before posix_spawn, system or popen). all: every fd counts as inherited (file
// actions may dup a close-on-exec fd into the child).
func (e *Engine) BeforeSpawn(t SpillTable, all bool) {
	fdsOf := map[*Socket][]int{}
	inherited := map[*Socket]bool{}
	var order []*Socket
	e.reg.mu.Lock()
	e.reg.each(func(fd int, s *Socket) {
		if s.rings() == nil {
			return
		}
		if _, ok := fdsOf[s]; !ok {
			order = append(order, s)
		}
		fdsOf[s] = append(fdsOf[s], fd)
		if all || inheritable(fd) {
			inherited[s] = true
		}
	})
	e.reg.mu.Unlock()
	for _, s := range order {
		if inherited[s] {
			e.sendBack(s, fdsOf[s], t, transport.ReasonForkedChild, "spawn: a child inherits the socket")
		}
	}
}

// inheritable reports whether fd survives an exec (no FD_CLOEXEC); an fd the kernel does not
// answer for counts as inherited.
func inheritable(fd int) bool {
	fl, errno := sysc.FcntlInt(fd, unix.F_GETFD, 0)
	return errno != 0 || fl&unix.FD_CLOEXEC == 0
}
