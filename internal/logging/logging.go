// Package logging builds goxio's logger: zap, with VMA's levels (VMA_TRACELEVEL), VMA's detail
// prefixes (VMA_LOG_DETAILS) and a writer that makes raw write(2) calls on an fd it asks for at
// each line, so that it never opens an os.File (which would start the Go netpoller and leave
// runtime fds in the program) and follows the fd when the library relocates it.
package logging

import (
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
)

// ZapLevel maps a VMA level onto zap's scale: INFO is zap's Info, each more verbose VMA level is
// one step below zap's Debug. LevelNone maps above every level zap logs at.
func ZapLevel(l conf.Level) zapcore.Level {
	if l <= conf.LevelNone {
		return zapcore.FatalLevel + 1
	}
	if l > conf.LevelFiner {
		l = conf.LevelFiner
	}
	return zapcore.Level(int(conf.LevelInfo) - int(l))
}

// VMALevel is the inverse of ZapLevel.
func VMALevel(z zapcore.Level) conf.Level {
	if z > zapcore.FatalLevel {
		return conf.LevelNone
	}
	l := int(conf.LevelInfo) - int(z)
	if l < int(conf.LevelPanic) {
		l = int(conf.LevelPanic)
	}
	return conf.Level(l)
}

// The levels goxio logs at, in zap's scale.
const (
	Details = zapcore.DebugLevel     // VMA DETAILS: configuration, decisions
	Debug   = zapcore.DebugLevel - 1 // VMA DEBUG: every control-path event
	Fine    = zapcore.DebugLevel - 2 // VMA FINE: fast-path activity
)

// Config selects what the logger prints.
type Config struct {
	Level conf.Level
	// Details is VMA_LOG_DETAILS: 0 none, 1 thread id, 2 process and thread id, 3 also the time.
	Details int
}

// Handle changes a logger's level and details while the program runs (goxio_stats -l, -D).
type Handle struct {
	level   zap.AtomicLevel
	details *detailSetting
}

// SetLevel sets the VMA level.
func (h *Handle) SetLevel(l conf.Level) { h.level.SetLevel(ZapLevel(l)) }

// Level returns the VMA level.
func (h *Handle) Level() conf.Level { return VMALevel(h.level.Level()) }

// SetDetails sets VMA_LOG_DETAILS.
func (h *Handle) SetDetails(n int) { h.details.n.Store(int32(n)) }

// New returns a logger writing to w, and the handle through which its level and details change
// at run time.
func New(cfg Config, w zapcore.WriteSyncer) (*zap.Logger, *Handle) {
	lvl := zap.NewAtomicLevelAt(ZapLevel(cfg.Level))
	details := &detailSetting{}
	details.n.Store(int32(cfg.Details))
	enc := &prefixEncoder{Encoder: zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		MessageKey:       "msg",
		ConsoleSeparator: " ",
	}), details: details}
	core := zapcore.NewCore(enc, w, lvl)
	return zap.New(core), &Handle{level: lvl, details: details}
}

// FDWriter writes log lines to the fd that FD returns at the moment of each write (a negative
// fd drops the line). Each line is one write(2) call, so lines of several threads and processes
// do not interleave within a line.
type FDWriter struct {
	FD func() int
}

// Write writes p with raw write(2) calls, retrying on EINTR and short writes.
func (w FDWriter) Write(p []byte) (int, error) {
	fd := w.FD()
	if fd < 0 {
		return len(p), nil
	}
	done := 0
	for done < len(p) {
		n, err := unix.Write(fd, p[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// Sync does nothing: every line is written when it is logged.
func (FDWriter) Sync() error { return nil }

// LogFilePath expands VMA_LOG_FILE's "%d" into the pid, as VMA does.
func LogFilePath(pattern string, pid int) string {
	return strings.ReplaceAll(pattern, "%d", strconv.Itoa(pid))
}

var levelNames = map[zapcore.Level]string{
	zapcore.FatalLevel + 1: "NONE",
	zapcore.FatalLevel:     "PANIC",
	zapcore.PanicLevel:     "PANIC",
	zapcore.DPanicLevel:    "PANIC",
	zapcore.ErrorLevel:     "ERROR",
	zapcore.WarnLevel:      "WARNING",
	zapcore.InfoLevel:      "INFO",
	Details:                "DETAILS",
	Debug:                  "DEBUG",
	Fine:                   "FINE",
	Fine - 1:               "FINER",
}

// LevelName is VMA's name of a zap level as goxio uses it.
func LevelName(l zapcore.Level) string {
	if n, ok := levelNames[l]; ok {
		return n
	}
	return l.CapitalString()
}

// prefixTime is the clock for detail level 3 (a variable for tests).
var prefixTime = time.Now
