package main

/*
#include <stdlib.h>
extern char **environ;

static char *goxio_environ_at(int i) { return environ == NULL ? NULL : environ[i]; }
*/
import "C"

import "os"

// processEnviron returns the program's environment as libc's environ holds it now. The Go
// runtime of a c-shared library takes its environment from the strings after argv on the
// initial stack, which is right for a library loaded at start-up only: the engine is loaded on
// demand (shim/preload/loader.c), and a program may have rewritten that area by then. redis
// does, for its process title (setproctitle: the environment is copied elsewhere and the
// original area overwritten), so its engine read no GOXIO_SHM and served nothing through rings.
// environ follows such copies. A program with no environ (cleared) gets the runtime's.
func processEnviron() []string {
	var env []string
	for i := 0; ; i++ {
		p := C.goxio_environ_at(C.int(i))
		if p == nil {
			break
		}
		env = append(env, C.GoString(p))
	}
	if env == nil {
		return os.Environ()
	}
	return env
}
