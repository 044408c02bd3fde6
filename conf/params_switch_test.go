package conf

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSwitches: goxio's own switches are parameters like the others: read from the environment
// and the TOML file, warned about when bad (the value below is kept), listed by All and
// NonDefault. The shared-memory transports are on by default; 0 turns them off.
func TestSwitches(t *testing.T) {
	d := Defaults()
	if !d.SHM || !d.SHMTCP || d.SHMDir != "/dev/shm" || d.XDP != "" || d.XDPMode != "auto" || d.XDPBusyPoll != 0 || d.XDPTxDelay != 0 {
		t.Fatalf("defaults: %+v", d)
	}
	p, w := Load([]string{"GOXIO_SHM=0", "GOXIO_SHM_TCP=0", "GOXIO_SHM_DIR=/run/shm", "GOXIO_XDP=eth0, eth1",
		"GOXIO_XDP_MODE=generic", "GOXIO_XDP_BUSY_POLL=50", "GOXIO_XDP_TX_DELAY=20", "GOXIO_SHM_SYSMON=normal"})
	if len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	if p.SHM || p.SHMTCP || p.SHMDir != "/run/shm" || p.XDP != "eth0, eth1" || p.XDPMode != "generic" ||
		p.XDPBusyPoll != 50 || p.XDPTxDelay != 20 || p.SHMSysmon != "normal" {
		t.Fatalf("loaded: %+v", p)
	}
	nd := map[string]Setting{}
	for _, s := range p.NonDefault() {
		nd[s.Name] = s
	}
	if s := nd["GOXIO_SHM_TCP"]; s.Value != "0" || s.Source != "env GOXIO_SHM_TCP" {
		t.Errorf("NonDefault GOXIO_SHM_TCP: %+v", s)
	}

	for _, bad := range []string{"GOXIO_SHM=yes please", "GOXIO_XDP_MODE=fast", "GOXIO_XDP=,,", "GOXIO_XDP=eth0/1",
		"GOXIO_XDP_BUSY_POLL=-1", "GOXIO_XDP_TX_DELAY=2000000", "GOXIO_SHM_DIR=shm", "GOXIO_SHM_SYSMON=fifo"} {
		p, w := Load([]string{bad})
		name, _, _ := strings.Cut(bad, "=")
		if len(w) != 1 || !strings.Contains(w[0].Error(), name) {
			t.Errorf("%s: warnings %v", bad, w)
		}
		if !slices.Equal(settingValues(p.All()), settingValues(Defaults().All())) {
			t.Errorf("%s: a bad value changed the parameters: %+v", bad, p)
		}
	}
	if _, w := Load([]string{"VMA_SHM=1"}); len(w) != 1 || !strings.Contains(w[0].Error(), "unknown") {
		t.Errorf("VMA_SHM: warnings %v (goxio's own switches have no VMA_ spelling)", w)
	}

	file := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(file, []byte("GOXIO_SHM = false\nGOXIO_XDP = \"all\"\nGOXIO_XDP_BUSY_POLL = 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, w = Load([]string{ParamsFileEnv + "=" + file, "GOXIO_XDP_BUSY_POLL=20"})
	if len(w) != 0 || p.SHM || p.XDP != "all" || p.XDPBusyPoll != 20 {
		t.Errorf("file: %+v %v", p, w)
	}
}

// settingValues lists the values of settings.
func settingValues(s []Setting) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Name + "=" + x.Value
	}
	return out
}
