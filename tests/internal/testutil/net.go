package testutil

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// FreePort returns a loopback port that was free a moment ago for network "tcp" or "udp": the kernel
// picks it for a socket bound to 127.0.0.1:0, which is then closed.
func FreePort(t testing.TB, network string) int {
	t.Helper()
	switch network {
	case "tcp":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free tcp port: %v", err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	case "udp":
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free udp port: %v", err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	t.Fatalf("free port: unknown network %q", network)
	return 0
}

// FreePortBoth returns a loopback port that was free for both TCP and UDP a moment ago.
func FreePortBoth(t testing.TB) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		p := FreePort(t, "tcp")
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			c.Close()
			return p
		}
	}
	t.Fatalf("free port: no port free for both tcp and udp after 50 tries")
	return 0
}

// WaitTCP waits until something accepts TCP connections on 127.0.0.1:port, up to timeout. When p is
// not nil and ends first, or the time runs out, the test fails.
func WaitTCP(t testing.TB, port int, timeout time.Duration, p *Proc) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if p != nil && p.Exited() {
			t.Fatalf("%s ended before listening on %s:\n%s", p.Name, addr, Tail(p.Output(), 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listening on %s after %v: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitBound waits, without connecting, until a socket of network ("tcp": in LISTEN state, "udp":
// bound) holds loopback or wildcard port, looking at /proc/net/{tcp,udp}{,6}. When p is not nil and
// ends first, or the time runs out, the test fails. Use it for servers that count every connection
// (iperf3 -1) or have nothing to connect to (UDP).
func WaitBound(t testing.TB, network string, port int, timeout time.Duration, p *Proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if portBound(network, port) {
			return
		}
		if p != nil && p.Exited() {
			t.Fatalf("%s ended before binding %s port %d:\n%s", p.Name, network, port, Tail(p.Output(), 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s socket bound to port %d after %v", network, port, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func portBound(network string, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/" + network, "/proc/net/" + network + "6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || !strings.HasSuffix(fields[1], want) {
				continue
			}
			// st 0A is TCP_LISTEN; a UDP socket bound to the port shows st 07 (TCP_CLOSE) or 01.
			if network == "udp" || fields[3] == "0A" {
				return true
			}
		}
	}
	return false
}
