package main

import (
	"debug/elf"
	"fmt"
	"os"
	"syscall"
)

// checkProgram inspects the program goxio is about to run and returns a
// message when the library cannot accelerate it, or "" when it can (or when
// the file is not ELF, such as a script, whose interpreter decides):
//   - a static program has no PT_INTERP: the dynamic loader never runs, so
//     LD_PRELOAD is ignored;
//   - a Go program (it has a .go.buildinfo section) makes its socket system
//     calls directly, not through libc, so no preloaded library sees them;
//   - a program of another ELF class or machine than the library makes the
//     loader skip the library;
//   - a set-user-ID or set-group-ID program runs in secure mode, where the
//     loader ignores LD_PRELOAD paths with a slash.
func checkProgram(path, lib string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	isGo := f.Section(".go.buildinfo") != nil
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
			break
		}
	}
	switch {
	case !dynamic && isGo:
		return fmt.Sprintf("%s is a statically linked Go program: LD_PRELOAD is ignored and Go does not call libc for sockets; nothing will be accelerated", path)
	case !dynamic:
		return fmt.Sprintf("%s is statically linked: the loader ignores LD_PRELOAD; nothing will be accelerated", path)
	case isGo:
		return fmt.Sprintf("%s is a Go program: Go does not call libc for sockets; nothing will be accelerated", path)
	}
	if lf, err := elf.Open(lib); err == nil {
		defer lf.Close()
		if lf.Class != f.Class || lf.Machine != f.Machine {
			return fmt.Sprintf("%s is a %s %s program but %s is %s %s: the loader skips the library; nothing will be accelerated",
				path, f.Class, f.Machine, lib, lf.Class, lf.Machine)
		}
	}
	if secureExec(path) {
		return fmt.Sprintf("%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it; nothing will be accelerated", path)
	}
	return ""
}

// secureExec reports whether running path changes the user or group id,
// which puts the loader in secure mode.
func secureExec(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return (st.Mode()&os.ModeSetuid != 0 && int(sys.Uid) != os.Getuid()) ||
		(st.Mode()&os.ModeSetgid != 0 && int(sys.Gid) != os.Getgid())
}
