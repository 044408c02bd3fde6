package shm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bells are the four kernel channels of one end in the wake stress tests: it sleeps on
// dataIn (its reader) and spaceIn (its writer), and rings the peer's through dataOut and
// spaceOut. Pipes, read ends non-blocking.
type bells struct{ dataIn, spaceIn, dataOut, spaceOut int }

// wakeCounts are what one end observed.
type wakeCounts struct{ dataSleeps, spaceSleeps, dataWakes, spaceWakes int }

// sleepOn waits until fd is readable (failing after 5 s: a lost wake-up) and drains it; it
// returns the number of bytes read.
func sleepOn(fd int, what string) (int, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := unix.Poll(fds, 200)
		if err == unix.EINTR || n == 0 && err == nil {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("lost %s wake-up: asleep 5 s", what)
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		var b [16]byte
		m, err := unix.Read(fd, b[:])
		if err == unix.EAGAIN {
			continue
		}
		return m, err
	}
}

func ringBell(fd int) error {
	_, err := unix.Write(fd, []byte{1})
	return err
}

// streamPeer runs one end of a wake stress test: a writer goroutine sending total pattern
// bytes and a reader checking total bytes from the peer, each sleeping on its bell whenever
// the protocol lets it, with random pauses so that both rings often run empty and full.
func streamPeer(c *Conn, bl bells, total int, seed uint64) (wakeCounts, error) {
	var counts wakeCounts
	var wg sync.WaitGroup
	var werr, rerr error
	deadline := time.Now().Add(90 * time.Second)
	capTx, _ := c.Capacities()
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 1))
		src := make([]byte, 3*capTx)
		for pos := 0; pos < total; {
			if time.Now().After(deadline) {
				werr = errors.New("writer: deadline")
				return
			}
			chunk := src[:min(total-pos, rng.IntN(len(src))+1)]
			fillPattern(chunk, uint64(pos))
			for len(chunk) > 0 {
				n, wake, err := c.Write(splitIov(rng, chunk))
				if wake {
					counts.dataWakes++
					if err := ringBell(bl.dataOut); err != nil {
						werr = err
						return
					}
				}
				pos += n
				chunk = chunk[n:]
				if err == nil {
					continue
				}
				if err != ErrFull {
					werr = fmt.Errorf("writer at %d: %w", pos, err)
					return
				}
				if rng.IntN(4) == 0 {
					runtime.Gosched() // a short spin
					continue
				}
				want := rng.IntN(capTx) + 1
				if c.WaitSpace(want) {
					if rng.IntN(2) == 0 {
						c.CancelWaitSpace()
					}
					continue
				}
				counts.spaceSleeps++
				if _, err := sleepOn(bl.spaceIn, "space"); err != nil {
					werr = fmt.Errorf("writer at %d waiting for %d bytes (space %d): %w", pos, want, c.Space(), err)
					return
				}
			}
			if rng.IntN(16) == 0 {
				time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
			}
		}
	}()
	go func() { // reader
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 2))
		buf := make([]byte, 3*capTx)
		for pos := 0; pos < total; {
			if time.Now().After(deadline) {
				rerr = errors.New("reader: deadline")
				return
			}
			dst := buf[:min(total-pos, rng.IntN(len(buf))+1)]
			read := func() (int, error) {
				n, wake, err := c.Read(splitIov(rng, dst))
				if wake {
					counts.spaceWakes++
					if err := ringBell(bl.spaceOut); err != nil {
						return 0, err
					}
				}
				if n > 0 && !bytes.Equal(dst[:n], pattern(uint64(pos), n)) {
					return 0, fmt.Errorf("reader: bytes differ at %d", pos)
				}
				pos += n
				if err == ErrEmpty {
					err = nil
				}
				return n, err
			}
			spins := rng.IntN(3)
			c.SpinBegin()
			got := 0
			for range spins {
				if pos >= total {
					break // the peer may close once it wrote total: a read now would be EOF
				}
				n, err := read()
				if err != nil {
					c.SpinEnd()
					rerr = err
					return
				}
				got += n
			}
			c.SpinEnd()
			if got > 0 {
				continue
			}
			n, err := read()
			if err != nil {
				rerr = err
				return
			}
			if n > 0 {
				if rng.IntN(16) == 0 {
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				}
				continue
			}
			counts.dataSleeps++
			m, err := sleepOn(bl.dataIn, "data")
			if err != nil {
				rerr = fmt.Errorf("reader at %d: %w", pos, err)
				return
			}
			if m != 1 {
				rerr = fmt.Errorf("reader: %d data wake-ups in flight", m)
				return
			}
			c.ClearWake()
		}
	}()
	wg.Wait()
	return counts, errors.Join(werr, rerr)
}

// pipes returns a non-blocking pipe (read end, write end).
func pipes(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

func checkCounts(t *testing.T, who string, c wakeCounts) {
	t.Helper()
	t.Logf("%s: %+v", who, c)
	if c.dataSleeps < 20 || c.spaceSleeps < 20 || c.dataWakes < 20 || c.spaceWakes < 20 {
		t.Errorf("%s: too few sleeps and wake-ups to exercise the protocol: %+v", who, c)
	}
}

// TestStreamWakeStress: both ends in this process, each with a writer and a reader goroutine,
// sleeping on pipes whenever the protocol allows; a sleep that lasts 5 s is a lost wake-up.
func TestStreamWakeStress(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 4096, 4096)
	var ab, as, bd, bs [2]int
	ab[0], ab[1] = pipes(t)
	as[0], as[1] = pipes(t)
	bd[0], bd[1] = pipes(t)
	bs[0], bs[1] = pipes(t)
	const total = 4 << 20
	var wg sync.WaitGroup
	var ca, cb wakeCounts
	var ea, eb error
	wg.Add(2)
	go func() {
		defer wg.Done()
		ca, ea = streamPeer(a, bells{dataIn: ab[0], spaceIn: as[0], dataOut: bd[1], spaceOut: bs[1]}, total, 1)
	}()
	go func() {
		defer wg.Done()
		cb, eb = streamPeer(b, bells{dataIn: bd[0], spaceIn: bs[0], dataOut: ab[1], spaceOut: as[1]}, total, 2)
	}()
	wg.Wait()
	if err := errors.Join(ea, eb); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, "a", ca)
	checkCounts(t, "b", cb)
}

const streamPeerEnv = "GOXIO_SHM_TEST_STREAMPEER" // "<dir>|<total>|<seed>" in the re-executed binary

// TestHelperStreamPeer is the second process of TestStreamWakeProcess: side 1 of the
// connection, its bells on fds 3 (data in), 4 (space in), 5 (data out), 6 (space out).
func TestHelperStreamPeer(t *testing.T) {
	v := os.Getenv(streamPeerEnv)
	if v == "" {
		return
	}
	f := strings.Split(v, "|")
	total, _ := strconv.Atoi(f[1])
	seed, _ := strconv.ParseUint(f[2], 10, 64)
	c, err := OpenConn(connCfg(f[0], testB, testA, 4096, 4096))
	if err == nil && c.Side() != 1 {
		err = errors.New("child created the segment")
	}
	if err == nil {
		err = c.SwitchWrite(0)
	}
	if err == nil {
		var counts wakeCounts
		counts, err = streamPeer(c, bells{3, 4, 5, 6}, total, seed)
		fmt.Printf("child %+v\n", counts)
		c.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream peer:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// TestStreamWakeProcess runs the wake stress test against a real second process (the test
// binary re-executed): both directions at once, sleeping on pipes between the processes.
func TestStreamWakeProcess(t *testing.T) {
	dir := testDir(t)
	a := mustOpen(t, connCfg(dir, testA, testB, 4096, 4096))
	if err := a.SwitchWrite(0); err != nil {
		t.Fatal(err)
	}
	var ad, as, cd, cs [2]int
	ad[0], ad[1] = pipes(t)
	as[0], as[1] = pipes(t)
	cd[0], cd[1] = pipes(t)
	cs[0], cs[1] = pipes(t)
	const total = 4 << 20
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStreamPeer$", "-test.count=1")
	cmd.Env = append(os.Environ(), streamPeerEnv+"="+dir+"|"+strconv.Itoa(total)+"|7")
	file := func(fd int) *os.File { return os.NewFile(uintptr(fd), "bell") }
	// os.NewFile takes ownership in this process only for the child's copy: dup first.
	dupf := func(fd int) *os.File {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		return file(d)
	}
	extra := []*os.File{dupf(cd[0]), dupf(cs[0]), dupf(ad[1]), dupf(as[1])}
	cmd.ExtraFiles = extra
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range extra {
		f.Close()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	counts, err := streamPeer(a, bells{dataIn: ad[0], spaceIn: as[0], dataOut: cd[1], spaceOut: cs[1]}, total, 8)
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		werr = <-done
	}
	if err != nil || werr != nil {
		t.Fatalf("parent: %v; child: %v\n%s", err, werr, out.String())
	}
	checkCounts(t, "parent", counts)
	t.Logf("%s", strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "child {") {
		t.Fatalf("child said nothing: %s", out.String())
	}
}
