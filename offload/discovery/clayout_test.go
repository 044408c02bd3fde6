package discovery

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goxio/goxio/conf"
)

// The preload library writes listener entries from C (shim/preload/lazy_listen.c) with the
// layout of shim/preload/dir_layout.h: every value there must be the one this package uses.
func TestCLayout(t *testing.T) {
	b, err := os.ReadFile("../../shim/preload/dir_layout.h")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^#define GOXIO_DIR_(\w+) +(\S+)`)
	got := map[string]string{}
	for _, m := range def.FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	d := conf.Defaults()
	want := map[string]uint64{
		"MAGIC": magic, "VERSION": version, "HEADER_WORDS": headerWords, "ENTRY_WORDS": entryWords,
		"ENTRIES": Entries,
		"H_MAGIC": hMagic, "H_VERSION": hVersion, "H_ENTRIES": hEntries, "H_HEADER_WORDS": hHeaderWords,
		"H_GEN": hGen, "H_CLAIM": hClaim, "H_HIGH": hHigh,
		"E_LOCK": eLock, "E_OWNER": eOwner, "E_START": eStart, "E_CLAIM": eClaim, "E_META": eMeta,
		"E_LOCAL": eLocal, "E_PEER": ePeer, "E_GROUP": eGroup, "E_SOURCE": eSource, "E_INBOX": eInbox,
		"E_END": eEnd, "MAX_INBOX": maxInbox,
		"F_V6ONLY": fV6Only, "F_STREAM": fStream, "F_LAZY": fLazy,
		"KIND4": kind4, "KIND6": kind6, "LOCK_TRIES": lockTries,
		"SHM_DEFAULT": b2u(d.SHM), "SHM_TCP_DEFAULT": b2u(d.SHMTCP),
	}
	for name, w := range want {
		s, ok := got[name]
		if !ok {
			t.Errorf("dir_layout.h: no GOXIO_DIR_%s", name)
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(s, "ULL"), 0, 64)
		if err != nil || v != w {
			t.Errorf("dir_layout.h: GOXIO_DIR_%s = %s, Go has %#x", name, s, w)
		}
		delete(got, name)
	}
	if dir := strings.Trim(got["DEFAULT_DIR"], `"`); dir != d.SHMDir {
		t.Errorf("dir_layout.h: GOXIO_DIR_DEFAULT_DIR = %s, conf's default GOXIO_SHM_DIR %q", got["DEFAULT_DIR"], d.SHMDir)
	}
	delete(got, "DEFAULT_DIR")
	for name := range got {
		t.Errorf("dir_layout.h: GOXIO_DIR_%s is not checked against Go", name)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
