package offload

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// A socket the engine saw made and no call bound yet reports, without a system call, the local
// address the kernel reports for it: its family's wildcard and port 0 (the rules match on it).
func TestUnboundLocalAddr(t *testing.T) {
	for _, domain := range []int{unix.AF_INET, unix.AF_INET6} {
		for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_STREAM} {
			fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			s := &Socket{domain: domain, typ: typ}
			s.unbound.Store(true)
			got, want := s.localAddr(fd), sysc.Sockname(fd)
			unix.Close(fd)
			if got != want {
				t.Errorf("domain %d type %d: localAddr %v, the kernel says %v", domain, typ, got, want)
			}
		}
	}
}
