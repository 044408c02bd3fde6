package sysc

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// Sockname and Peername answer what x/sys/unix's Getsockname and Getpeername answer, for IPv4
// and IPv6, bound, connected and not; the zero value for errors and other families.
func TestSocknamePeername(t *testing.T) {
	for _, c := range []struct {
		family int
		addr   unix.Sockaddr
	}{
		{unix.AF_INET, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}},
		{unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{15: 1}}},
	} {
		srv, err := unix.Socket(c.family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skipf("socket family %d: %v", c.family, err)
		}
		defer unix.Close(srv)
		if err := unix.Bind(srv, c.addr); err != nil {
			t.Skipf("bind family %d: %v", c.family, err)
		}
		cli, err := unix.Socket(c.family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(cli)
		if got := Peername(cli); got.IsValid() {
			t.Errorf("family %d: Peername of an unconnected socket = %v", c.family, got)
		}
		srvName, _ := unix.Getsockname(srv)
		if err := unix.Connect(cli, srvName); err != nil {
			t.Fatal(err)
		}
		for _, fd := range []int{srv, cli} {
			if got, want := Sockname(fd), want(t, unix.Getsockname, fd); got != want || got.Port() == 0 {
				t.Errorf("family %d fd %d: Sockname = %v, want %v", c.family, fd, got, want)
			}
		}
		if got, want := Peername(cli), want(t, unix.Getpeername, cli); got != want || !got.IsValid() {
			t.Errorf("family %d: Peername = %v, want %v", c.family, got, want)
		}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if got := Sockname(p[0]); got.IsValid() {
		t.Errorf("Sockname of a pipe = %v", got)
	}
	u, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(u)
	if got := Sockname(u); got.IsValid() {
		t.Errorf("Sockname of an AF_UNIX socket = %v", got)
	}
}

func want(t *testing.T, f func(int) (unix.Sockaddr, error), fd int) netip.AddrPort {
	t.Helper()
	sa, err := f(fd)
	if err != nil {
		t.Fatal(err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	t.Fatalf("family of %T", sa)
	return netip.AddrPort{}
}
