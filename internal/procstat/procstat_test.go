package procstat

import (
	"os"
	"os/exec"
	"testing"
)

func TestParse(t *testing.T) {
	state, start, err := Parse([]byte("42 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21\n"))
	if err != nil || state != 'S' || start != 987654 {
		t.Fatalf("Parse = %c %d %v", state, start, err)
	}
	for _, bad := range []string{"", "42 no parens", "42 (a) S 1 2", "42 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20"} {
		if _, _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestAlive(t *testing.T) {
	start, err := SelfStart()
	if err != nil || start == 0 {
		t.Fatalf("SelfStart = %d %v", start, err)
	}
	if !Alive(os.Getpid(), start) || !Alive(os.Getpid(), 0) {
		t.Fatal("this process is not alive")
	}
	if Alive(os.Getpid(), start+1) {
		t.Fatal("a wrong start time was accepted (a reused pid)")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(cmd.Process.Pid, 0) || Alive(0, 0) || Alive(-1, 0) || Alive(maxPID+1, 0) {
		t.Fatal("a gone or impossible pid is alive")
	}
}
