package conf

import (
	"fmt"
	"strings"
)

// Level is a log verbosity in VMA's numbering (VMA's vlog_levels_t): a
// message is logged when its level is at or below the configured one. The
// logging package maps these onto its own levels.
type Level int8

// VMA's log levels, least to most verbose.
const (
	LevelNone    Level = -1 // log nothing
	LevelPanic   Level = 0  // fatal problems only
	LevelError   Level = 1  // run-time errors
	LevelWarning Level = 2  // problems that do not stop the program
	LevelInfo    Level = 3  // start-up banner and general information (the default)
	LevelDetails Level = 4  // the complete configuration, critical decisions
	LevelDebug   Level = 5  // every socket call and control-path event
	LevelFine    Level = 6  // fast-path activity; slows the program down
	LevelFiner   Level = 7  // everything; slows the program down a lot
	LevelAll     Level = 8  // same as LevelFiner today

	LevelFunc    = LevelFine  // VMA's older name for LevelFine
	LevelFuncAll = LevelFiner // VMA's older name for LevelFiner
)

var levelNames = [...]string{"NONE", "PANIC", "ERROR", "WARNING", "INFO", "DETAILS", "DEBUG", "FINE", "FINER", "ALL"}

// levelInputs lists every spelling VMA_TRACELEVEL accepts, as VMA's
// log_level::from_str does (case-insensitive). Numbers follow VMA's user-facing
// numbering, which skips DETAILS: 0 panic, 1 error, 2 warn, 3 info, 4 debug,
// 5 fine, 6 finer.
var levelInputs = map[string]Level{
	"none":        LevelNone,
	"panic":       LevelPanic,
	"0":           LevelPanic,
	"error":       LevelError,
	"1":           LevelError,
	"warn":        LevelWarning,
	"warning":     LevelWarning,
	"2":           LevelWarning,
	"info":        LevelInfo,
	"information": LevelInfo,
	"3":           LevelInfo,
	"details":     LevelDetails,
	"debug":       LevelDebug,
	"4":           LevelDebug,
	"fine":        LevelFine,
	"func":        LevelFine,
	"5":           LevelFine,
	"finer":       LevelFiner,
	"func+":       LevelFiner,
	"funcall":     LevelFiner,
	"func_all":    LevelFiner,
	"func-all":    LevelFiner,
	"6":           LevelFiner,
	"all":         LevelAll,
}

// String returns VMA's name of the level ("INFO", "DEBUG", ...), or
// "LEVEL(n)" for a value outside VMA's range.
func (l Level) String() string {
	if l >= LevelNone && l <= LevelAll {
		return levelNames[l+1]
	}
	return fmt.Sprintf("LEVEL(%d)", int8(l))
}

// Valid reports whether l is one of VMA's levels.
func (l Level) Valid() bool { return l >= LevelNone && l <= LevelAll }

// ParseLevel parses a VMA_TRACELEVEL value: a name (none, panic, error,
// warn/warning, info/information, details, debug, fine/func, finer/func+/
// funcall/func_all/func-all, all; any case) or one of VMA's numbers 0-6
// (0 panic, 1 error, 2 warn, 3 info, 4 debug, 5 fine, 6 finer).
// Surrounding white space is ignored.
func ParseLevel(s string) (Level, error) {
	if l, ok := levelInputs[strings.ToLower(strings.TrimSpace(s))]; ok {
		return l, nil
	}
	return LevelInfo, fmt.Errorf("parse trace level %q: want none, panic, error, warn, info, details, debug, fine, finer, all or 0-6", s)
}
