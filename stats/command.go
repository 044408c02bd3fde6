package stats

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Reader commands travel through the segment's command slots:
//
//	reader: claim a free slot (CAS free->claimed), fill kind and arguments,
//	        store state=posted, increment the header's posted counter, wake
//	        the futex on that counter
//	writer: CommandWait sleeps on the futex until the counter moves;
//	        PollCommands sees the posted counter move, runs every posted
//	        slot through the CommandHandler, stores the result and
//	        state=done, increments the header's done counter
//	reader: sees state=done with its id, frees the slot (CAS done->free)
//
// A slot left claimed, posted or done by a reader that died is reclaimed
// after staleClaim.

// CommandHandler is implemented by the engine: PollCommands calls it on the
// polling thread. Arguments are range-checked before the call.
type CommandHandler interface {
	// SetLogLevel sets the log level, VMA numbering: -1 none, 0 panic,
	// 1 error, 2 warn, 3 info, 4 details, 5 debug, 6 fine, 7 finer, 8 all.
	SetLogLevel(level int)
	// SetLogDetails sets VMA_LOG_DETAILS (0..3).
	SetLogDetails(n int)
	// DumpFD logs the full state of socket fd (-1: every socket) at the
	// given log level through the process's logger.
	DumpFD(fd int, level int)
}

// Command results.
const (
	ResultApplied  = 0 // the handler ran
	ResultNoEngine = 1 // PollCommands was called with a nil handler
	ResultRejected = 2 // kind or arguments out of range
)

// staleClaim is how long a command slot may stay claimed, posted or done
// before another reader may reuse it.
const staleClaim = 30 * time.Second

// Log levels in VMA numbering, for SetLogLevel and DumpFD.
const (
	LogNone    = -1
	LogPanic   = 0
	LogError   = 1
	LogWarn    = 2
	LogInfo    = 3
	LogDetails = 4
	LogDebug   = 5
	LogFine    = 6
	LogFiner   = 7
	LogAll     = 8
)

// cmdSlot returns command slot i of a segment's words.
func cmdSlot(mem []uint64, g geometry, i int) []uint64 {
	off := g.cmdOff + i*g.cmdWordsPer
	return mem[off : off+cmdWords]
}

// PollCommands runs the commands readers posted since the last call and
// acknowledges them; it returns how many ran. When nothing was posted it
// costs one atomic load. Call it from one thread (the progress engine);
// concurrent calls return 0 instead of waiting.
func (w *Writer) PollCommands(h CommandHandler) int {
	if w == nil {
		return 0
	}
	posted := atomic.LoadUint64(&w.hdr[hCmdPosted])
	if posted == w.cmdSeen.Load() {
		return 0
	}
	if !w.cmdMu.TryLock() {
		return 0
	}
	defer w.cmdMu.Unlock()
	w.cmdSeen.Store(posted)
	ran := 0
	for i := range w.geo.cmdCount {
		c := cmdSlot(w.mem, w.geo, i)
		if atomic.LoadUint64(&c[cState]) != cmdPosted {
			continue
		}
		kind := CommandKind(atomic.LoadUint64(&c[cKind]))
		a1 := int64(atomic.LoadUint64(&c[cArg1]))
		a2 := int64(atomic.LoadUint64(&c[cArg2]))
		atomic.StoreUint64(&c[cResult], runCommand(h, kind, a1, a2))
		atomic.StoreUint64(&c[cState], cmdDone)
		atomic.AddUint64(&w.hdr[hCmdDone], 1)
		w.global.Add(GlobalCommandsApplied, 1)
		ran++
	}
	return ran
}

// CommandWait blocks the calling thread until a reader posts a command or
// timeout passes (<= 0: no limit), with a raw shared futex wait on the
// segment: no timer, no CPU while idle. It returns true when a command may
// be pending (then call PollCommands). The engine runs
// `for { w.CommandWait(0); w.PollCommands(h) }` on a thread of its own. On a
// nil Writer it returns false at once.
func (w *Writer) CommandWait(timeout time.Duration) bool {
	if w == nil {
		return false
	}
	word := &w.hdr[hCmdPosted]
	seen := w.cmdSeen.Load()
	if atomic.LoadUint64(word) != seen {
		return true
	}
	futexWaitWord(word, uint32(seen), int64(timeout))
	return atomic.LoadUint64(word) != seen
}

// runCommand checks a command's arguments (they come from another process)
// and calls the handler.
func runCommand(h CommandHandler, kind CommandKind, a1, a2 int64) uint64 {
	validLevel := func(l int64) bool { return l >= LogNone && l <= LogAll }
	switch {
	case kind == CmdSetLogLevel && validLevel(a1):
	case kind == CmdSetLogDetails && a1 >= 0 && a1 <= 3:
	case kind == CmdDumpFD && a1 >= -1 && a1 <= 1<<31-1 && validLevel(a2):
	default:
		return ResultRejected
	}
	if h == nil {
		return ResultNoEngine
	}
	switch kind {
	case CmdSetLogLevel:
		h.SetLogLevel(int(a1))
	case CmdSetLogDetails:
		h.SetLogDetails(int(a1))
	case CmdDumpFD:
		h.DumpFD(int(a1), int(a2))
	}
	return ResultApplied
}

// ErrCommandTimeout is returned when a process did not acknowledge a command
// in time (its progress engine is not polling, or it is stopped).
var ErrCommandTimeout = errors.New("command not acknowledged")

// ErrCommandBusy is returned when every command slot is taken.
var ErrCommandBusy = errors.New("all command slots are busy")

// ErrReadOnly is returned for a change on a segment opened read-only.
var ErrReadOnly = errors.New("segment opened read-only")

// Command is a posted command, to wait for.
type Command struct {
	seg  *Segment
	slot int
	id   uint64
}

// Post writes a command into a free command slot and signals the process.
func (s *Segment) Post(kind CommandKind, arg1, arg2 int64) (*Command, error) {
	if !s.writable {
		return nil, fmt.Errorf("post command: %w", ErrReadOnly)
	}
	now := uint64(time.Now().UnixNano())
	for i := range s.geo.cmdCount {
		c := cmdSlot(s.mem, s.geo, i)
		st := atomic.LoadUint64(&c[cState])
		stale := now-atomic.LoadUint64(&c[cClaimed]) > uint64(staleClaim)
		if st != cmdFree && !stale {
			continue
		}
		if !atomic.CompareAndSwapUint64(&c[cState], st, cmdClaimed) {
			continue
		}
		id := now ^ uint64(i)<<56 | 1
		atomic.StoreUint64(&c[cClaimed], now)
		atomic.StoreUint64(&c[cID], id)
		atomic.StoreUint64(&c[cKind], uint64(kind))
		atomic.StoreUint64(&c[cArg1], uint64(arg1))
		atomic.StoreUint64(&c[cArg2], uint64(arg2))
		atomic.StoreUint64(&c[cResult], 0)
		atomic.StoreUint64(&c[cState], cmdPosted)
		atomic.AddUint64(&s.hdr[hCmdPosted], 1)
		futexWakeWord(&s.hdr[hCmdPosted])
		return &Command{seg: s, slot: i, id: id}, nil
	}
	return nil, fmt.Errorf("post command: %w", ErrCommandBusy)
}

// Wait waits up to timeout for the process to run the command and returns
// its result (ResultApplied, ResultNoEngine, ResultRejected). On timeout the
// command is withdrawn when the process has not taken it yet.
func (c *Command) Wait(timeout time.Duration) (int, error) {
	slot := cmdSlot(c.seg.mem, c.seg.geo, c.slot)
	deadline := time.Now().Add(timeout)
	for {
		if atomic.LoadUint64(&slot[cID]) != c.id {
			return 0, fmt.Errorf("wait for command: slot reused by another reader: %w", ErrCommandTimeout)
		}
		if atomic.LoadUint64(&slot[cState]) == cmdDone {
			res := int(atomic.LoadUint64(&slot[cResult]))
			atomic.CompareAndSwapUint64(&slot[cState], cmdDone, cmdFree)
			return res, nil
		}
		if time.Now().After(deadline) {
			if atomic.CompareAndSwapUint64(&slot[cState], cmdPosted, cmdFree) ||
				atomic.LoadUint64(&slot[cState]) != cmdDone {
				return 0, fmt.Errorf("wait for command after %v: %w", timeout, ErrCommandTimeout)
			}
			continue // the process took it just now: collect the result
		}
		time.Sleep(time.Millisecond)
	}
}
