package discovery

import (
	"os"
	"testing"
)

// TestParseStat reads field 22 after a command name with spaces and
// parentheses.
func TestParseStat(t *testing.T) {
	line := "1234 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21\n"
	state, start, err := parseStat([]byte(line))
	if err != nil || state != 'S' || start != 987654 {
		t.Errorf("parseStat = %c %d %v", state, start, err)
	}
	for _, bad := range []string{"", "1234 no parens", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 z"} {
		if _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// TestProcessAlive: this process with its start time is alive, with another
// start time or as a reaped pid it is not.
func TestProcessAlive(t *testing.T) {
	start, err := selfStartTime()
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(os.Getpid(), start) || !processAlive(os.Getpid(), 0) {
		t.Error("this process is not alive")
	}
	if processAlive(os.Getpid(), start+1) {
		t.Error("reused pid taken for the owner")
	}
	if processAlive(deadPid(t), 0) || processAlive(0, 0) || processAlive(-1, 0) {
		t.Error("dead pid alive")
	}
}
