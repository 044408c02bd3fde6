package sysc

import "testing"

func TestParseRunnable(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		isOK bool
	}{
		{"0.50 0.40 0.30 3/120 4567\n", 3, true},
		{"12.01 9.10 4.00 17/2048 99", 17, true},
		{"0.50 0.40 0.30 3", 0, false},
		{"0.50 0.40 0.30 x/120 1", 0, false},
		{"0.50 0.40 0.30 /120 1", 0, false},
		{"  0.50\t0.40 0.30  5/120 1", 5, true},
		{"1 2 3 99999999999999999999/1 1", 0, false},
		{"1 2 3", 0, false},
		{"", 0, false},
	} {
		if n, ok := parseRunnable([]byte(c.in)); n != c.n || ok != c.isOK {
			t.Errorf("parseRunnable(%q) = %d %v, want %d %v", c.in, n, ok, c.n, c.isOK)
		}
	}
	if n, ok := Runnable(); !ok || n < 1 {
		t.Errorf("Runnable() = %d %v: this thread runs, so at least 1", n, ok)
	}
	fd, err := Open("/proc/loadavg", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	for range 2 {
		if n, ok := RunnableAt(fd); !ok || n < 1 {
			t.Errorf("RunnableAt() = %d %v: this thread runs, so at least 1", n, ok)
		}
	}
	// A crowd look allocates nothing (each one was two allocations: a collection every second or
	// two under load), with the race detector too.
	if a := testing.AllocsPerRun(100, func() { RunnableAt(fd) }); a != 0 {
		t.Errorf("RunnableAt allocates %v times, want 0", a)
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		isOK bool
	}{
		{"0-1\n", 2, true},
		{"0", 1, true},
		{"0-3,6,8-9\n", 7, true},
		{"3-1", 0, false},
		{"", 0, false},
		{"a-b", 0, false},
	} {
		if n, ok := parseCPUList([]byte(c.in)); n != c.n || ok != c.isOK {
			t.Errorf("parseCPUList(%q) = %d %v, want %d %v", c.in, n, ok, c.n, c.isOK)
		}
	}
	if n, ok := OnlineCPUs(); !ok || n < 1 {
		t.Errorf("OnlineCPUs() = %d %v", n, ok)
	}
}

func TestAllowedCPUs(t *testing.T) {
	n, ok := AllowedCPUs()
	on, onok := OnlineCPUs()
	if !ok || !onok || n < 1 || n > on {
		t.Errorf("AllowedCPUs() = %d %v, OnlineCPUs() = %d %v: want 1..online", n, ok, on, onok)
	}
}
