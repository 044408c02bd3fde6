package main

/*
#include "engine.h"
extern int goxio_log_fd;
*/
import "C"

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/internal/logging"
	"github.com/goxio/goxio/internal/version"
	"github.com/goxio/goxio/offload"
	"github.com/goxio/goxio/stats"
)

// library is the process-wide state of the library.
type library struct {
	params conf.Params
	log    *zap.Logger
	logs   *logging.Handle
	engine *offload.Engine
	stats  *stats.Writer
}

var lib library

// start runs once, on the program's main thread, from the library's last constructor
// (goxio_late -> goxio_go_start), after the Go initialization and before the program's main().
// Not in init(): init runs on a thread of the Go runtime, asynchronously to the program's start;
// here the engine is ready before main(). It never fails: whatever goes wrong is logged, and the library
// then passes every call through.
func start() {
	procs := procsTarget()
	raised := startingProcs()
	watchThreads(procs)
	params, warnings := conf.Load(processEnviron())
	params = params.WithPID(os.Getpid())
	lib.params = params
	lib.log, lib.logs = newLogger(params)
	for _, w := range warnings {
		lib.log.Warn(w.Error())
	}
	nofile := restoreFileLimit()
	if _, _, err := offload.StartNetpoller(cTable{}); err != nil {
		lib.log.Warn("the Go runtime's descriptors stay where it put them", zap.Error(err))
	}
	if C.goxio_main_is_go() != 0 {
		lib.log.Info("this program is written in Go: Go does not use libc for sockets, so goxio cannot offload any of them; all calls go to the kernel")
		return
	}
	banner(params)
	lib.log.Debug("Go runtime", zap.Int("GOMAXPROCS", runtime.GOMAXPROCS(0)), zap.Int("CPUs", runtime.NumCPU()),
		zap.Int("from the second thread", procs), zap.Int("raised at start to", raised),
		zap.Uint64("fd limit restored to", nofile))

	rules := loadRules(params)
	sweepLeftovers(params)
	lib.stats = openStats(params)
	shm := newSHM(params, lib.log, lib.stats)
	xdp := newXDP(params, lib.log, lib.stats)
	shmtcp := newSHMTCP(params, lib.log)
	ksend := kernelSends(shm, xdp, lib.stats.CaptureWord(), lib.stats.Global().Word(stats.GlobalKernelFromStart))
	earlySpin(params.RxPoll != 0)
	lib.engine = offload.New(offload.Config{
		Rules:         rules,
		Program:       programName(),
		AppID:         params.AppID,
		Offload:       params.OffloadedSockets,
		Table:         cTable{},
		Log:           lib.log,
		Stats:         lib.stats,
		SHM:           shm,
		SHMTCP:        shmtcp,
		IOMux:         iomuxParams(params),
		XDP:           xdp,
		KSend:         ksend,
		EarlyListener: earlyPhase(shmtcp, shm, ksend, lib.stats.Global().Word(stats.GlobalEarlyClosed)),
		PlainListener: plainListener,
		ExtraAPI:      extraAPIUsed,
	})
	offload.WatchCrowd(cTable{})
	offload.CountCrowdSleeps(lib.stats.Global().Word(stats.GlobalCrowdSleeps))
	if params.SHMDir != "" {
		if err := offload.ShareCrowd(params.SHMDir); err != nil {
			lib.log.Debug("waits count the runnable threads only", zap.Error(err))
		}
	}
	C.goxio_set_ready(1)
}

func programName() string {
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return ""
}

// loadRules reads the rule file; every bad line is reported once, the rest applies. A missing
// default file is normal (no rules: offload everything), a missing file the user named is not.
func loadRules(p conf.Params) *conf.RuleSet {
	rules, errs := conf.LoadRules(p.ConfigFile)
	explicit := p.ConfigFile != conf.Defaults().ConfigFile
	for _, err := range errs {
		if !explicit && os.IsNotExist(unwrapAll(err)) {
			lib.log.Debug("no rule file", zap.String("file", p.ConfigFile))
			continue
		}
		lib.log.Warn(err.Error())
	}
	return rules
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
}

// goxio_log_fd is the log file's fd, an internal fd of the library (fdtable.c); -1 when logging
// goes to stderr.
var logFD = (*int32)(unsafe.Pointer(&C.goxio_log_fd))

// newLogger opens VMA_LOG_FILE (if set) as an internal fd and builds the logger. Without a log
// file, lines go to the program's fd 2 while it is still the stderr the program started with
// (a program that closes fd 2 and reuses the number must not get log lines in its socket).
func newLogger(p conf.Params) (*zap.Logger, *logging.Handle) {
	target := logTarget{fd: func() int { return 2 }}
	var st unix.Stat_t
	if unix.Fstat(2, &st) == nil {
		target.dev, target.ino, target.check = st.Dev, st.Ino, true
	} else {
		target.fd = func() int { return -1 }
	}
	if p.LogFile != "" {
		path := p.LogFile
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o644)
		if err == nil {
			C.goxio_internal_adopt(C.int(fd), (*C.int)(unsafe.Pointer(logFD)))
			target = logTarget{fd: func() int { return int(atomic.LoadInt32(logFD)) }}
		} else {
			defer func() {
				lib.log.Warn("cannot open VMA_LOG_FILE, logging to stderr", zap.String("file", path), zap.Error(err))
			}()
		}
	}
	return logging.New(logging.Config{Level: p.TraceLevel, Details: p.LogDetails}, logging.FDWriter{FD: target.current})
}

// logTarget is where log lines go: the log file's internal fd, or fd 2 while it is the stderr the
// program started with (check, dev, ino).
type logTarget struct {
	fd       func() int
	check    bool
	dev, ino uint64
}

// current returns the fd for one line, or -1 when fd 2 is no longer the stderr the program
// started with.
func (t logTarget) current() int {
	fd := t.fd()
	if fd < 0 || !t.check {
		return fd
	}
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || now.Dev != t.dev || now.Ino != t.ino {
		return -1
	}
	return fd
}

// banner prints VMA's start-up banner at INFO: version, command line, and every parameter that
// differs from its default.
func banner(p conf.Params) {
	const rule = "---------------------------------------------------------------------------"
	l := lib.log
	if !l.Core().Enabled(zap.InfoLevel) {
		return
	}
	l.Info(rule)
	l.Info(version.Name + " " + version.Version + " (libgoxio.so, pid " + strconv.Itoa(os.Getpid()) + ")")
	l.Info("Cmd Line: " + strings.Join(os.Args, " "))
	for _, s := range p.NonDefault() {
		l.Info(pad(s.Name, 32) + " " + pad(s.Value, 24) + " [" + s.Source + "]")
	}
	l.Info(rule)
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
