package main

/*
#include "engine.h"
extern int goxio_stats_file_fd;
*/
import "C"

import (
	"errors"
	"os"
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
	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/stats"
)

var statsFileFD = (*int32)(unsafe.Pointer(&C.goxio_stats_file_fd))

// openStats creates the process's statistics segment (VMA_STATS_SHMEM_DIR; "" disables it) and
// opens VMA_STATS_FILE. Failure costs the statistics, never the program.
func openStats(p conf.Params) *stats.Writer {
	if p.StatsShmemDir == "" {
		return nil
	}
	var params []stats.Param
	for _, s := range p.All() {
		params = append(params, stats.Param{Name: s.Name, Value: s.Value})
	}
	w, err := stats.Create(p.StatsShmemDir, p.StatsFDNum, stats.ProcessInfo{
		Cmdline: os.Args, AppID: p.AppID, Version: version.Version, Params: params,
	})
	if err != nil {
		if !errors.Is(err, stats.ErrDisabled) {
			lib.log.Warn("statistics segment not created, running without statistics", zap.Error(err))
		}
		return nil
	}
	lib.log.Debug("statistics segment", zap.String("path", w.Path()))
	capture.Init(w.CaptureWord(), os.Getpid(), func(err error) { lib.log.Warn("goxio capture not attached", zap.Error(err)) })
	if p.StatsFile != "" {
		fd, err := unix.Open(p.StatsFile, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o644)
		if err != nil {
			lib.log.Warn("cannot open VMA_STATS_FILE", zap.String("file", p.StatsFile), zap.Error(err))
		} else {
			C.goxio_internal_adopt(C.int(fd), (*C.int)(unsafe.Pointer(statsFileFD)))
			w.SetFinalFile(int(atomic.LoadInt32(statsFileFD)))
		}
	}
	go serveCommands(w)
	return w
}

// serveCommands runs the commands goxio_stats posts in the segment (log level, log details, fd
// dump) on a thread of its own. Between commands it sleeps in a futex wait on the segment's
// command word (goxio_stats wakes it), so an idle process uses no CPU; no Go timer is involved
// (a timer would start the netpoller and open fds in the program).
func serveCommands(w *stats.Writer) {
	runtime.LockOSThread()
	for {
		w.PollCommands(commands{})
		w.CommandWait(0)
	}
}

// commands carries out goxio_stats' commands.
type commands struct{}

func (commands) SetLogLevel(level int) {
	lib.logs.SetLevel(conf.Level(level))
	lib.log.Info("log level set by goxio_stats", zap.Stringer("level", conf.Level(level)))
}

func (commands) SetLogDetails(n int) { lib.logs.SetDetails(n) }

func (commands) DumpFD(fd int, level int) {
	ce := lib.log.Check(logging.ZapLevel(conf.Level(level)), "fd dump")
	if ce == nil || lib.engine == nil {
		return
	}
	snaps := lib.engine.Sockets()
	var b strings.Builder
	n := 0
	for _, s := range snaps {
		if fd >= 0 && s.FD != fd {
			continue
		}
		n++
		b.WriteString("\n  fd=" + strconv.Itoa(s.FD) + " " + s.Proto + " transport=" + s.Transport.String())
		if s.Passthrough || s.Reason != 0 {
			b.WriteString(" reason=" + s.Reason.String())
		}
		if s.Role != "" {
			b.WriteString(" role=" + s.Role + " decision=" + s.Decision)
		}
		b.WriteString(" local=" + s.Local.String() + " remote=" + s.Remote.String())
		b.WriteString(" nonblocking=" + boolStr(s.NonBlocking))
		b.WriteString(" rx=" + u64(s.RxPackets) + "/" + u64(s.RxBytes) + "B tx=" + u64(s.TxPackets) + "/" + u64(s.TxBytes) +
			"B eagain=" + u64(s.EAgain) + " errors=" + u64(s.Errors))
	}
	if n == 0 {
		b.WriteString(" no goxio socket with fd " + strconv.Itoa(fd))
	}
	ce.Write(zap.String("sockets", b.String()))
}

// goxio_go_exit runs from the library's destructor at exit() in the process that started goxio
// (never in a forked child): the statistics segment is removed.
//
//export goxio_go_exit
func goxio_go_exit() {
	if g, i := sysmonStarted(); g+i > 0 && lib.log != nil {
		lib.log.Debug("threads the idle monitor thread started", zap.Int("with its former class", g),
			zap.Int("idle (the system refused the former class)", i))
	}
	if lib.engine != nil {
		lib.engine.Shutdown()
	}
	if lib.stats != nil {
		_ = lib.stats.Close()
	}
}

func boolStr(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
