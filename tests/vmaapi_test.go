package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestIntegrationVMAExtraAPI runs programs written against goxio_extra.h (tests/vmaapi/*.c).
// zcopy.c: without the library it finds no API and copies; under the library it gets VMA's API object and
// moves UDP datagrams (held together, checked after the sender closed, freed with double, foreign
// and cross-socket frees refused) and a TCP stream through recvfrom_zcopy and free_packets, on the
// kernel and on the shared-memory transports; with GOXIO_EXTRA_API=0 the mask is empty, every
// member refuses with EOPNOTSUPP, and it takes its fallback path. callback.c: a receive callback's
// DROP, RECV and HOLD verdicts against read, recv, recvfrom and recvmsg, or the program's own
// filtering without it. rules.c: add_conf_rule's rules decide the next sockets, first in the list;
// dump_fd_stats logs the socket. header.c: get_socket_network_header of a connected UDP socket
// equals the datagram captured on lo (kernel transport, as root). thread.c: thread_offload(0, tid) keeps a thread's new sockets with the
// kernel (the EINVAL probes say so), thread_offload(1, tid) undoes it. The data each prints is the
// same in every run.
func TestIntegrationVMAExtraAPI(t *testing.T) {
	lib := integrationLib(t)
	runs := []struct {
		name, mode string
		env        []string
	}{
		{"kernel transport", "full", testutil.Env(lib, offEnv...)},
		{"shared memory", "full", testutil.Env(lib, shmEnv...)},
		{"mask cleared", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=0"}, offEnv...)...)},
		{"mask cleared, shared memory", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=off"}, shmEnv...)...)},
	}
	for _, prog := range []string{"zcopy", "callback", "thread", "rules", "header"} {
		t.Run(prog, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), prog)
			testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", prog+".c"), bin, "-O2", "-Wall", "-Werror")
			want := runClient(t, testutil.Env(""), 30*time.Second, bin, "none")
			for _, r := range runs {
				got := runClient(t, r.env, 30*time.Second, bin, r.mode)
				if !bytes.Equal(got.Stdout, want.Stdout) {
					t.Errorf("%s: output differs from the run without the library:\n%s\nwant:\n%s\nstderr:\n%s", r.name,
						got.Stdout, want.Stdout, testutil.Tail(string(got.Stderr), 2000))
				}
				if bytes.Contains(got.Stderr, []byte("unknown parameter")) {
					t.Errorf("%s: %s", r.name, got.Stderr)
				}
				if prog == "rules" && r.mode == "full" {
					checkDump(t, r.name, string(got.Stderr))
				}
				// the kernel carries this run's datagrams (the shared-memory transports off)
				if prog == "header" && r.name == "kernel transport" && os.Geteuid() == 0 &&
					!bytes.Contains(got.Stderr, []byte("header equals the captured datagram's")) {
					t.Errorf("%s: the header was not compared with a captured datagram:\n%s", r.name, got.Stderr)
				}
			}
		})
	}
}

// checkDump finds the log line dump_fd_stats wrote for the fd rules.c names ("dump fd N").
func checkDump(t *testing.T, name, stderr string) {
	t.Helper()
	m := regexp.MustCompile(`dump fd (\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Errorf("%s: rules.c did not say which fd it dumped:\n%s", name, stderr)
		return
	}
	if !regexp.MustCompile(`fd dump .*fd=` + m[1] + ` udp transport=`).MatchString(stderr) {
		t.Errorf("%s: no log line of fd %s from dump_fd_stats:\n%s", name, m[1], stderr)
	}
}
