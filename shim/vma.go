package main

/*
#include "engine.h"
*/
import "C"

import (
	"syscall"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
)

// goxio_go_vma_rule serves VMA's add_conf_rule (shim/preload/vma_extra.c): line, one "use" rule,
// goes first among the rules deciding for this process. 0, or -EINVAL for a line that is not one
// rule (said in the log).
//
//export goxio_go_vma_rule
func goxio_go_vma_rule(line *C.char) C.long {
	e := lib.engine
	if e == nil {
		return -C.long(syscall.ENODEV)
	}
	if err := e.AddRule(C.GoString(line)); err != nil {
		lib.log.Warn("add_conf_rule refused", zap.Error(err))
		return -C.long(syscall.EINVAL)
	}
	return 0
}

// goxio_go_vma_dump serves VMA's dump_fd_stats: the state of socket fd (0: every socket) is logged
// at level, in VMA's numbering (as goxio_stats' dump command). 0, or -EINVAL for a level outside
// VMA's.
//
//export goxio_go_vma_dump
func goxio_go_vma_dump(fd, level C.int) C.long {
	if level < C.int(conf.LevelPanic) || level > C.int(conf.LevelAll) {
		return -C.long(syscall.EINVAL)
	}
	if fd == 0 {
		fd = -1
	}
	commands{}.DumpFD(int(fd), int(level))
	return 0
}
