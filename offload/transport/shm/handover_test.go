package shm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// received is one receive's result.
type received struct {
	n     int
	errno unix.Errno
	data  string
}

// recvAsync receives on (u, fd) in a goroutine.
func recvAsync(u *UDP, fd, flags int) chan received {
	ch := make(chan received, 1)
	go func() {
		buf := make([]byte, 64)
		n, errno, _, _ := recvfrom(u, fd, buf, flags)
		ch <- received{n, errno, string(buf[:max(n, 0)])}
	}()
	return ch
}

// wantReceived fails unless ch delivers data within a generous bound (a hang is the failure).
func wantReceived(t *testing.T, ch chan received, data string) {
	t.Helper()
	select {
	case r := <-ch:
		if r.errno != 0 || r.data != data {
			t.Fatalf("receive: n %d errno %v %q, want %q", r.n, r.errno, r.data, data)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("receive still waiting, want %q", data)
	}
}

// TestReceiveDuringHandOver: a datagram a fork's hand-over took from the rings is never absent
// for a receive of the process: one that comes between HandOver and SetSpill waits for the
// region and returns the datagram (a non-blocking one too: the kernel would have it queued).
func TestReceiveDuringHandOver(t *testing.T) {
	e := testEnv(t, 1000)
	rfd, ru := udpSock(t, e, true)
	sfd, su := udpSock(t, e, false)
	if n, errno, os := sendto(su, sfd, []byte("queued"), sockname(rfd)); n != 6 || errno != 0 || os {
		t.Fatalf("send: %d %v os=%v", n, errno, os)
	}
	recs, back := ru.Fork(rfd)
	if !back || len(recs) != 1 || string(recs[0][1]) != "queued" {
		t.Fatalf("Fork: back %v, %d records", back, len(recs))
	}
	ch := recvAsync(ru, rfd, unix.MSG_DONTWAIT)
	time.Sleep(20 * time.Millisecond) // the receive is in the engine, the region not made yet
	region, err := udpcall.BuildSpill(recs)
	if err != nil {
		t.Fatal(err)
	}
	ru.SetSpill(region)
	ru.GiveUp(transport.ReasonForkedChild)
	wantReceived(t, ch, "queued")
	// Taken once: the next non-blocking receive finds the kernel socket empty.
	if n, errno, _, _ := recvfrom(ru, rfd, make([]byte, 8), unix.MSG_DONTWAIT); errno != unix.EAGAIN {
		t.Fatalf("second receive: %d %v, want EAGAIN", n, errno)
	}
}

// TestSpillWakesSleeper: a blocking receive asleep on the socket when the spill region is set is
// woken and returns the spilled datagram (it would otherwise sleep in the kernel socket with
// its datagram in the region).
func TestSpillWakesSleeper(t *testing.T) {
	e := testEnv(t, 10)
	rfd, ru := udpSock(t, e, true)
	ch := recvAsync(ru, rfd, 0)
	time.Sleep(50 * time.Millisecond) // past its polls: asleep on the kernel socket and the bell
	recs, back := ru.Fork(rfd)
	if !back || len(recs) != 0 {
		t.Fatalf("Fork: back %v, %d records", back, len(recs))
	}
	var name [16]byte
	putSockaddr4(name[:], sockname(rfd))
	region, err := udpcall.BuildSpill([][2][]byte{{name[:], []byte("spilled")}})
	if err != nil {
		t.Fatal(err)
	}
	ru.SetSpill(region)
	ru.GiveUp(transport.ReasonForkedChild)
	wantReceived(t, ch, "spilled")
}
