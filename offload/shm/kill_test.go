package shm

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const producerEnv = "GOXIO_SHM_TEST_PRODUCER" // "<dir>|<inbox>" in the re-executed test binary

// TestHelperProducer is the producer process of TestKilledProducer: it sends self-checking
// records of varying sizes, with contiguous sequence numbers (a full ring is retried), until
// it is killed or 30 seconds pass. Without the environment variable it does nothing.
func TestHelperProducer(t *testing.T) {
	v := os.Getenv(producerEnv)
	if v == "" {
		return
	}
	dir, name, _ := cut(v)
	o, err := DialInbox(dir, name, 16384)
	if err != nil {
		os.Stderr.WriteString("producer: " + err.Error() + "\n")
		os.Exit(3)
	}
	buf := make([]byte, 2000)
	end := time.Now().Add(30 * time.Second)
	for seq := uint64(0); time.Now().Before(end); {
		size := sizeFor(seq)
		_, err := o.Send([]byte("src"), [][]byte{makeRecord(buf, 1, seq, size)}, size)
		switch err {
		case nil:
			seq++
		case ErrFull:
			runtime.Gosched()
		default:
			os.Exit(4)
		}
	}
	os.Exit(0)
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '|' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestKilledProducer: a producer process SIGKILLed in its write loop. The consumer keeps
// reading: it never hangs, never sees a torn record (each carries a CRC), gets a contiguous
// sequence, and detaches and removes the dead ring once drained.
func TestKilledProducer(t *testing.T) {
	old := sweepInterval
	sweepInterval = 0
	defer func() { sweepInterval = old }()
	for round, killAfter := range []int{1, 2000, 20000} {
		dir := testDir(t)
		name := "kill" + strconv.Itoa(round)
		in := mustInbox(t, dir, name, 2)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProducer$", "-test.count=1")
		cmd.Env = append(os.Environ(), producerEnv+"="+dir+"|"+name)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start producer: %v", err)
		}
		var next uint64
		killed := false
		deadline := time.Now().Add(20 * time.Second)
		for {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: consumer did not finish: %d records, killed %v, rings %d", round, next, killed, len(in.rings))
			}
			in.Refresh()
			_, d, err := in.Peek()
			if err == ErrEmpty {
				if killed && len(in.rings) == 0 && !in.Pending() {
					break
				}
				runtime.Gosched()
				continue
			}
			if err != nil {
				t.Fatalf("round %d: Peek: %v", round, err)
			}
			_, seq, ok := checkRecord(d)
			if !ok || seq != next || len(d) != sizeFor(seq) {
				t.Fatalf("round %d: record %d: seq %d len %d crc ok %v", round, next, seq, len(d), ok)
			}
			in.Pop()
			next++
			if !killed && next == uint64(killAfter) {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatalf("kill: %v", err)
				}
				cmd.Wait()
				killed = true
			}
		}
		if in.CorruptRings() != 0 || in.AttachFailures() != 0 {
			t.Fatalf("round %d: corrupt %d attach failures %d", round, in.CorruptRings(), in.AttachFailures())
		}
		if f := dirFiles(t, dir); len(f) != 1 {
			t.Fatalf("round %d: files left %v", round, f)
		}
		t.Logf("round %d: killed after %d records, %d received", round, killAfter, next)
	}
}
