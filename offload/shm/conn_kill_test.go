package shm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const streamWriterEnv = "GOXIO_SHM_TEST_STREAMWRITER" // "<dir>" in the re-executed test binary

// TestHelperStreamWriter is the writer process of TestConnKilledWriter: side 1 of the
// connection, it writes the pattern stream in random iovecs as fast as the ring takes it until
// it is killed or 30 seconds pass.
func TestHelperStreamWriter(t *testing.T) {
	dir := os.Getenv(streamWriterEnv)
	if dir == "" {
		return
	}
	c, err := OpenConn(connCfg(dir, testB, testA, 65536, 65536))
	if err == nil {
		err = c.SwitchWrite(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(3)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	src := make([]byte, 40000)
	end := time.Now().Add(30 * time.Second)
	for pos := 0; time.Now().Before(end); {
		chunk := src[:rng.IntN(len(src))+1]
		fillPattern(chunk, uint64(pos))
		n, _, err := c.Write(splitIov(rng, chunk))
		pos += n
		switch err {
		case nil:
		case ErrFull:
			runtime.Gosched()
		default:
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(4)
		}
	}
	os.Exit(0)
}

// TestConnKilledWriter: the writing peer is SIGKILLed in its write loop. The reader gets a
// prefix of the stream, intact (every byte checked, and the hashes of the whole prefix
// compared), then sees the peer dead and stops: it never hangs and never sees a partial write.
func TestConnKilledWriter(t *testing.T) {
	for round, killAfter := range []int{1, 100_000, 3_000_000} {
		dir := testDir(t)
		a := mustOpen(t, connCfg(dir, testA, testB, 65536, 65536))
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStreamWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), streamWriterEnv+"="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start writer: %v", err)
		}
		got := sha256.New()
		buf := make([]byte, 50000)
		pos, killed, deadChecks := 0, false, 0
		deadline := time.Now().Add(30 * time.Second)
		for {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: reader did not finish: %d bytes, killed %v", round, pos, killed)
			}
			n, _, err := a.Read([][]byte{buf[:rand.IntN(len(buf))+1]})
			if n > 0 {
				if !bytes.Equal(buf[:n], pattern(uint64(pos), n)) {
					t.Fatalf("round %d: bytes differ in [%d, %d)", round, pos, pos+n)
				}
				got.Write(buf[:n])
				pos += n
			}
			if err != nil && err != ErrEmpty {
				t.Fatalf("round %d: Read: %v", round, err)
			}
			if !killed && pos >= killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatalf("kill: %v", err)
				}
				cmd.Wait()
				killed = true
			}
			if err == ErrEmpty {
				if killed {
					deadChecks++
					if a.PeerDead() {
						// Everything the dead peer published is readable: drain once more.
						for {
							n, _, err := a.Read([][]byte{buf})
							if n == 0 {
								if err != ErrEmpty {
									t.Fatalf("round %d: final Read: %v", round, err)
								}
								break
							}
							if !bytes.Equal(buf[:n], pattern(uint64(pos), n)) {
								t.Fatalf("round %d: bytes differ in [%d, %d)", round, pos, pos+n)
							}
							got.Write(buf[:n])
							pos += n
						}
						break
					}
				}
				runtime.Gosched()
			}
		}
		if !a.PeerAttached() || a.Readable() != 0 || deadChecks == 0 {
			t.Fatalf("round %d: attached %v readable %d", round, a.PeerAttached(), a.Readable())
		}
		want := sha256.Sum256(pattern(0, pos))
		if !bytes.Equal(got.Sum(nil), want[:]) {
			t.Fatalf("round %d: hash of the %d-byte prefix differs", round, pos)
		}
		a.Close()
		if f := dirFiles(t, dir); len(f) != 0 {
			t.Fatalf("round %d: files left %v", round, f)
		}
		t.Logf("round %d: killed after %d bytes, read %d intact (sha256 %x...)", round, killAfter, pos, want[:6])
	}
}

// TestConnPeerDeadReusedPID: a peer whose pid runs another process (start time differs) is
// dead; our own live process is not.
func TestConnPeerDeadReusedPID(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 0, 0)
	if a.PeerDead() || b.PeerDead() {
		t.Fatal("a live peer looks dead")
	}
	// Fake a reused pid: side 1's start time no longer matches its pid. a caches the peer's
	// identity when it first sees it, so use a fresh creator.
	c := mustOpen(t, connCfg(dir, netipPort(42000), testB, 0, 0))
	d := mustOpen(t, connCfg(dir, testB, netipPort(42000), 0, 0))
	if d.Side() != 1 {
		t.Fatalf("side %d", d.Side())
	}
	storeWord(c.mem, sideOff(1)+sdStart, 1)
	if !c.PeerDead() {
		t.Fatal("a reused pid looks alive")
	}
	e := mustOpen(t, connCfg(dir, netipPort(42001), testB, 0, 0))
	storeWord(e.mem, sideOff(1)+sdTag, uint64(deadProcess(t))<<32|tagReady)
	if !e.PeerDead() || e.PeerPID() == os.Getpid() {
		t.Fatal("a gone pid looks alive")
	}
}

// storeWord scribbles on a segment word as a peer could.
func storeWord(mem []byte, off int, v uint64) { atomic.StoreUint64(word64(mem, off), v) }
