package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestShmBoxRecv: plain receives (recvfrom, recv, read, recvmsg) of a burst on a ring socket take
// the datagrams the engine queued in the socket's box without entering the engine for each
// (shim/preload/box.c): tests/shm/boxrecv.c counts its calls into the engine around its
// receives, and checks that every datagram comes whole, in order, from the sender's address.
func TestShmBoxRecv(t *testing.T) {
	h := newShmHarness(t)
	const rounds, burst = 80, 200
	final := filepath.Join(t.TempDir(), "final")
	out := shmProgRun(t, "boxrecv", h.env("VMA_STATS_FILE="+final), strconv.Itoa(rounds), strconv.Itoa(burst))
	for _, k := range []string{"recvfrom", "recv", "read", "recvmsg"} {
		got, calls := out[k+" got"], out[k+" calls"]
		if got != rounds/4*burst || out[k+" bad"] != 0 {
			t.Errorf("%s: %d datagrams, %d not the next one whole; want %d, 0", k, got, out[k+" bad"], rounds/4*burst)
		}
		if calls < 0 {
			t.Fatal("goxio_thread_engine_calls not found in the library")
		}
		// A box holds 32 records: a receive that enters the engine takes one datagram and
		// queues up to 32, so about one call in 33; a quarter leaves room for a sender that
		// was slow to fill the ring.
		if calls*4 > got {
			t.Errorf("%s: %d engine calls for %d datagrams; want at most a quarter", k, calls, got)
		}
	}
	if out["mixed got"] != burst {
		t.Errorf("mixed: %d datagrams, want %d", out["mixed got"], burst)
	}
	// Every datagram counts once in the statistics, however it was received: the datagrams
	// queued in a box count when queued, and not again when the engine's receive takes them
	// (recvmmsg, "mixed"). Both sockets: 4 warm-up datagrams each way, the rounds, the mixed burst.
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatalf("VMA_STATS_FILE: %v", err)
	}
	received := 0
	for _, m := range regexp.MustCompile(`Rx (?:Offload|OS info): +\d+ / (\d+) /`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[1])
		received += n
	}
	if want := 8 + rounds*burst + burst; received != want {
		t.Errorf("statistics: %d datagrams received, want %d\n%s", received, want, b)
	}
	h.requireClean()
}

// TestShmKernelRead: plain receives on a ring socket whose datagrams come through the kernel
// (senders without goxio) read the kernel socket without entering the engine
// (shim/preload/box.c, rx_kread), and answer as the kernel does: tests/shm/kread.c prints the
// same transcript with and without the library (recvmsg with a control buffer or a buffer array
// the library has not seen, a bad buffer's EFAULT that loses the datagram,
// MSG_TRUNC, EAGAIN with MSG_DONTWAIT and O_NONBLOCK, a blocking receive's SO_RCVTIMEO after
// O_NONBLOCK went, a goxio sender's ring datagrams mixed in, each sender's in order) but for its
// engine calls, which are none; the statistics count every kernel datagram once.
func TestShmKernelRead(t *testing.T) {
	h := newShmHarness(t)
	const rounds = 400
	final := filepath.Join(t.TempDir(), "final")
	plain := shmProgRun(t, "kread", os.Environ(), strconv.Itoa(rounds))
	out := shmProgRun(t, "kread", h.env("VMA_STATS_FILE="+final), strconv.Itoa(rounds))
	for k, v := range plain {
		if strings.HasSuffix(k, " calls") {
			if out[k] < 0 {
				t.Fatal("goxio_thread_engine_calls not found in the library")
			}
			if out[k] != 0 {
				t.Errorf("%s: %d engine calls for %d datagrams from the kernel, want 0", k, out[k], rounds/4)
			}
			continue
		}
		if out[k] != v {
			t.Errorf("%s: %d under goxio, %d without", k, out[k], v)
		}
	}
	if plain["recvfrom got"] != rounds/4 || plain["mixed got"] != 400 || plain["mixed disorder"] != 0 ||
		plain["nonblock eagain"] != 100 || plain["blocking waited"] != 1 || plain["msghdr got"] != 50 {
		t.Fatalf("the program's own run without goxio: %v", plain)
	}
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatalf("VMA_STATS_FILE: %v", err)
	}
	// 4 warm-up datagrams of 1 byte, then 64-byte ones: the rounds, 50 through unusual msghdrs,
	// the one after the bad buffer, 2 truncated, 20 to the non-blocking socket, the kernel
	// sender's 200 of the mixed run; the bad buffer's EFAULT is an error; the MSG_DONTWAIT and the
	// 100 O_NONBLOCK receives of an empty socket EAGAIN (a blocking receive's SO_RCVTIMEO is
	// no kernel read's answer, wherever it waited).
	const got = 4 + rounds + 50 + 3 + 20 + 200
	if want := fmt.Sprintf("Rx OS info: %d / %d / 101 / 1 [", ((got-4)*64+4)/1024, got); !strings.Contains(string(b), want) {
		t.Errorf("final statistics lack %q:\n%s", want, b)
	}
	h.requireClean()
}

// TestShmKernelWait: a blocking receive on a ring socket whose datagrams come through the kernel
// waits for the next one without the engine (shim/preload/kwait.c), and ends as the kernel's
// does: tests/shm/kwait.c prints the same transcript with and without the library (datagrams
// sent after the receive began, SO_RCVTIMEO's EAGAIN, EINTR from a handler without SA_RESTART,
// a handler with SA_RESTART that lets the receive go on, EINTR with one when the socket has a
// timeout, a goxio sender whose ring's first record wakes the wait) but for its engine calls,
// which are none (after SO_RCVTIMEO changed and handlers ran too).
func TestShmKernelWait(t *testing.T) {
	h := newShmHarness(t)
	const rounds = 40
	plain := shmProgRun(t, "kwait", os.Environ(), strconv.Itoa(rounds))
	out := shmProgRun(t, "kwait", h.env(), strconv.Itoa(rounds))
	for k, v := range plain {
		if strings.HasSuffix(k, " calls") {
			if out[k] != 0 {
				t.Errorf("%s: %d engine calls, want 0", k, out[k])
			}
			continue
		}
		if out[k] != v {
			t.Errorf("%s: %d under goxio, %d without", k, out[k], v)
		}
	}
	want := map[string]int{"wait got": rounds, "wait bad": 0, "timeout eagain": 1, "timeout waited": 1, "intr eintr": 1,
		"intr handled": 1, "intr next": 300, "restart seq": 301, "restart handled": 1, "timedrestart eintr": 1,
		"ring got": 12, "ring disorder": 0, "ring lost": 0}
	for k, v := range want {
		if plain[k] != v {
			t.Fatalf("the program's own run without goxio: %s=%d, want %d (%v)", k, plain[k], v, plain)
		}
	}
	h.requireClean()
}
