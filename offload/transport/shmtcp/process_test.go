package shmtcp

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	ring "github.com/goxio/goxio/offload/shm"

	"github.com/goxio/goxio/offload/transport"
)

// The second process: the test binary re-executed with GOXIO_SHMTCP_CHILD=mode,port,dir.
// Modes: echo (send back everything until EOF), flood (send the stream of seed 9 forever).

func TestMain(m *testing.M) {
	if v := os.Getenv("GOXIO_SHMTCP_CHILD"); v != "" {
		os.Exit(child(v))
	}
	os.Exit(m.Run())
}

func child(v string) int {
	var mode, dir string
	var port int
	if _, err := fmt.Sscanf(v, "%s %d %s", &mode, &port, &dir); err != nil {
		fmt.Fprintln(os.Stderr, "child args:", err)
		return 2
	}
	env, err := NewEnv(Params{Dir: dir, RingBytes: 64 << 10}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 2
	}
	tr := env.NewTCP(func() bool { return false })
	tr.Established(fd, false)
	buf, _ := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	switch mode {
	case "echo":
		for {
			n, errno := tr.Transfer(transport.Call{Op: transport.OpRead, FD: fd, A: [5]uintptr{addr(buf), uintptr(len(buf))}})
			if errno != 0 || n == 0 {
				break
			}
			for off := 0; off < n; {
				m, errno := tr.Transfer(transport.Call{Op: transport.OpWrite, FD: fd, A: [5]uintptr{addr(buf[off:]), uintptr(n - off)}})
				if errno != 0 {
					return 3
				}
				off += m
			}
		}
	case "flood":
		data := stream(9, 64<<20)
		for off := 0; off < len(data); {
			n := copy(buf, data[off:min(off+len(buf), len(data))])
			m, errno := tr.Transfer(transport.Call{Op: transport.OpSendto, FD: fd, A: [5]uintptr{addr(buf), uintptr(n), unix.MSG_NOSIGNAL}})
			if errno != 0 {
				return 3
			}
			off += m
		}
		time.Sleep(time.Minute) // killed before
	}
	tr.Close(fd)
	unix.Close(fd)
	ring.DrainConnPool() // as the library does at exit
	return 0
}

// startChild runs the second process connected to a fresh listener and returns the accepted,
// established server end.
func startChild(t *testing.T, env *Env, mode string) (*end, *exec.Cmd) {
	t.Helper()
	l, port := listen(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOXIO_SHMTCP_CHILD=%s %d %s", mode, port, env.p.Dir))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	sfd := accept(t, l)
	s := newEnd(t, env, sfd)
	s.tr.Established(sfd, true)
	return s, cmd
}

// TestTwoProcessEcho: 8 MiB through a second process's echo, sent and received at once,
// compared by hash; the connection runs on the rings.
func TestTwoProcessEcho(t *testing.T) {
	env := testEnv(t, nil)
	s, cmd := startChild(t, env, "echo")
	const n = 8 << 20
	data := stream(10, n)
	var wg sync.WaitGroup
	var perr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		perr = pump(t, s, data, 21)
	}()
	sum, got, err := drain(t, s, n, 22)
	wg.Wait()
	if perr != nil || err != nil {
		t.Fatalf("pump %v drain %v", perr, err)
	}
	if got != n || sum != sha256.Sum256(data) {
		t.Fatalf("echo: %d of %d bytes, hash equal %v", got, n, sum == sha256.Sum256(data))
	}
	st := s.tr.Stats()
	t.Logf("server %+v", st)
	// The child (the creator) switches before its first echo: every echoed byte comes through
	// the ring. Our direction switches once the child did, after a start-up delay in which the
	// kernel's socket buffers absorb megabytes.
	if !st.TxRing || !st.RxRing || st.RingRx != n || st.RingTx == 0 {
		t.Fatalf("not on the rings: %+v", st)
	}
	s.tr.Shutdown(s.fd, unix.SHUT_WR)
	_ = unix.Shutdown(s.fd, unix.SHUT_WR)
	if b, errno := s.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("after the echo ended: %q %v", b, errno)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// TestPeerKilled: the peer is SIGKILLed mid-transfer: the receiver gets an intact prefix, then
// EOF or ECONNRESET, then sends fail with EPIPE; never a hang.
func TestPeerKilled(t *testing.T) {
	env := testEnv(t, nil)
	s, cmd := startChild(t, env, "flood")
	want := stream(9, 64<<20)
	got := s.recvAll(2 << 20)
	if !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("prefix differs")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	deadline := time.Now().Add(20 * time.Second)
	total := len(got)
	var end unix.Errno
	for {
		b, errno := s.recv(len(s.rbuf), 0)
		if errno != 0 {
			end = errno
			break
		}
		if len(b) == 0 {
			break
		}
		if !bytes.Equal(b, want[total:total+len(b)]) {
			t.Fatalf("bytes after %d differ", total)
		}
		total += len(b)
		if time.Now().After(deadline) {
			t.Fatalf("receiving never ended after the kill")
		}
	}
	if end != 0 && end != unix.ECONNRESET {
		t.Fatalf("receive ended with %v", end)
	}
	t.Logf("received %d bytes, then %v", total, map[bool]string{true: "EOF", false: strconv.Quote(end.Error())}[end == 0])
	var last unix.Errno
	for i := 0; i < 5; i++ {
		_, last = s.send([]byte("x"), unix.MSG_NOSIGNAL)
		if last == unix.EPIPE {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last != unix.EPIPE {
		t.Fatalf("send to a killed peer: %v, want EPIPE", last)
	}
}
