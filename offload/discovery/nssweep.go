package discovery

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Files of network namespaces that are gone. The directory segment (goxio.<uid>.<netns>.dir) and
// the TCP pairing table (goxio.<uid>.<netns>.pairs2) are shared by every goxio process of a user
// in one network namespace and outlive them all, so that the next process finds them. A namespace
// that goes away (a container, a test's `ip netns`, `unshare -n`) leaves its files, 1.5 MiB of
// memory in /dev/shm each time, for good: a host that runs many short-lived namespaces fills
// /dev/shm. They are removed by the next engine that starts (SweepNamespaces) once no process of
// the user is in that namespace any more: the files hold only what such processes published, and
// a process that enters the namespace later makes them afresh.
//
// Seeing every process of the user takes the initial PID namespace (a process in a container sees
// only the container's): elsewhere nothing is removed. Two cases remain where a namespace in use
// loses its files: a process of the user whose namespace this one may not read (more
// privileged: capabilities this one lacks, or not dumpable) and that is the user's only one
// there, and a process that enters a namespace without any process of the user between the scan
// of /proc and the removal. Such a process keeps the files it mapped, and processes that start
// after it make new ones: they do not find each other's sockets, whose traffic then goes through
// the kernel, as it does between a goxio process and one without goxio. Nothing breaks; those
// connections are not accelerated.

// initPIDNamespace is the inode of the initial PID namespace (PROC_PID_INIT_INO).
const initPIDNamespace = 0xeffffffc

// SweepNamespaces removes dir's per-namespace files of uid (each named as one of names gives it:
// goxio.<uid>.<netns>.<suffix>, FileName for one) whose network namespace no process of uid is
// in, ours (self) excepted; it returns how many it removed.
func SweepNamespaces(dir string, uid int, self uint64,
	names ...func(uid int, netns uint64) string) (int, error) {
	prefix := "goxio." + strconv.Itoa(uid) + "."
	var suffixes []string
	for _, name := range names {
		suffix, ok := strings.CutPrefix(name(uid, 1), prefix+"1.")
		if !ok {
			return 0, fmt.Errorf("sweep namespaces: %q is not a per-namespace name", name(uid, 1))
		}
		suffixes = append(suffixes, suffix)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("sweep namespaces: %w", err)
	}
	files := map[uint64][]string{} // another namespace's files, by namespace
	for _, e := range ents {
		if netns, ok := namespaceFile(e.Name(), prefix, suffixes); ok && netns != self {
			files[netns] = append(files[netns], e.Name())
		}
	}
	if len(files) == 0 {
		return 0, nil
	}
	inUse, err := namespacesInUse(uid, files)
	if err != nil {
		return 0, fmt.Errorf("sweep namespaces: %w", err)
	}
	n := 0
	for netns, list := range files {
		if inUse[netns] {
			continue
		}
		for _, name := range list {
			if unix.Unlink(dir+"/"+name) == nil {
				n++
			}
		}
	}
	return n, nil
}

// namespaceFile parses prefix + netns + "." + one of suffixes.
func namespaceFile(name, prefix string, suffixes []string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	num, suffix, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	for _, s := range suffixes {
		if suffix == s {
			netns, err := strconv.ParseUint(num, 10, 64)
			return netns, err == nil && netns != 0
		}
	}
	return 0, false
}

// namespacesInUse returns which of the network namespaces of files a process of uid is in (as far
// as it may read them). It fails outside the initial PID namespace.
func namespacesInUse(uid int, files map[uint64][]string) (map[uint64]bool, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return nil, fmt.Errorf("stat /proc/self/ns/pid: %w", err)
	}
	if st.Ino != initPIDNamespace {
		return nil, fmt.Errorf("not in the initial PID namespace: other processes are not all visible")
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	inUse := map[uint64]bool{}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		var pst unix.Stat_t
		if unix.Stat("/proc/"+p.Name(), &pst) != nil || int(pst.Uid) != uid {
			continue // gone meanwhile, or another user's
		}
		if unix.Stat("/proc/"+p.Name()+"/ns/net", &st) != nil {
			continue // gone meanwhile, a zombie, or not ours to read (above)
		}
		if _, ok := files[st.Ino]; ok {
			inUse[st.Ino] = true
		}
	}
	return inUse, nil
}
