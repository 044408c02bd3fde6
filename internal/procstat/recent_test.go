package procstat

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// AliveRecent answers as Alive: yes for this process (from the cache the second time), no for a
// wrong start time and for a pid that does not exist, whatever the cache holds.
func TestAliveRecent(t *testing.T) {
	start, err := SelfStart()
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	for range 3 {
		if !AliveRecent(pid, start) {
			t.Fatalf("AliveRecent(self) = false")
		}
	}
	if AliveRecent(pid, start+1) {
		t.Errorf("AliveRecent(self, another start time) = true")
	}
	if AliveRecent(maxPID, 1) {
		t.Errorf("AliveRecent(pid %d) = true", maxPID)
	}
	// An entry older than RecentTTL is checked again (and still alive).
	recent.mu.Lock()
	for i := range recent.ent {
		if recent.ent[i].pid == pid {
			recent.ent[i].seen = time.Now().Add(-2 * RecentTTL)
		}
	}
	recent.mu.Unlock()
	if !AliveRecent(pid, start) {
		t.Errorf("AliveRecent(self) after the TTL = false")
	}
	// A full cache keeps answering correctly.
	for i := range 2 * recentSize {
		AliveRecent(pid, start+uint64(i)+2)
	}
	if !AliveRecent(pid, start) {
		t.Errorf("AliveRecent(self) with a full cache = false")
	}
}

// TestAliveRecentDeath: a process found alive and then killed and reaped is dead for AliveRecent
// once KillTTL has passed since the last kill(2) that found it.
func TestAliveRecentDeath(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var start uint64
	buf := make([]byte, 1024)
	b, err := Read(pid, buf)
	if err == nil {
		_, start, err = Parse(b)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("start time of the child: %v", err)
	}
	for range 3 { // the first answer from /proc, the next ones from the cache
		if !AliveRecent(pid, start) {
			t.Fatalf("AliveRecent(child %d) = false while it runs", pid)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(2 * KillTTL)
	if AliveRecent(pid, start) {
		t.Errorf("AliveRecent(child %d) = true %v after it was reaped", pid, 2*KillTTL)
	}
}
