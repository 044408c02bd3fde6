package shm

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelFirstMark: a socket that sent to a receiver through the kernel (as in the preload
// library's early phase: raw sends on its kernel socket) and is then told so
// (SentThroughKernel) marks its first ring datagram there: the receiver takes the kernel
// datagrams first, so the sender's datagrams arrive in the order sent; without the call, the
// ring datagram is taken first (the receiver's rings come before its kernel socket).
func TestKernelFirstMark(t *testing.T) {
	for _, told := range []bool{true, false} {
		t.Run(fmt.Sprint("told=", told), func(t *testing.T) {
			e := testEnv(t, 1000)
			rfd, ru := udpSock(t, e, true)
			sfd, su := udpSock(t, e, true) // bound: its ring datagrams carry its address
			to := loop(rfd)
			buf := make([]byte, 64)
			// The receiver has taken a ring datagram before: its next receive looks at its
			// rings first.
			if _, errno, os := sendto(su, sfd, []byte("r"), to); errno != 0 || os {
				t.Fatalf("first ring datagram: %v os=%v", errno, os)
			}
			if n, _, os, _ := recvfrom(ru, rfd, buf, 0); n != 1 || os {
				t.Fatalf("first receive: %d os=%v", n, os)
			}
			for i := range 2 {
				if err := unix.Sendto(sfd, []byte{byte('0' + i)}, 0, &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()}); err != nil {
					t.Fatal(err)
				}
			}
			if told {
				su.SentThroughKernel(to)
			}
			if _, errno, os := sendto(su, sfd, []byte("2"), to); errno != 0 || os {
				t.Fatalf("ring datagram: %v os=%v", errno, os)
			}
			var got []byte
			for range 3 {
				n, errno, _, _ := recvfrom(ru, rfd, buf, 0)
				if n != 1 || errno != 0 {
					t.Fatalf("receive: %d %v", n, errno)
				}
				got = append(got, buf[0])
			}
			if want := "012"; told && string(got) != want {
				t.Errorf("received %q, want %q: the ring datagram overtook the kernel's", got, want)
			}
			if want := "201"; !told && string(got) != want {
				t.Errorf("without the mark received %q, want %q (the test no longer tells the mark's work)", got, want)
			}
			// The mark counts once: the next ring datagram is plain.
			if _, mark := su.markFor(su.route.Load()); mark {
				t.Errorf("the mark is still pending after a ring datagram")
			}
		})
	}
}
