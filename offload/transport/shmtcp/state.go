package shmtcp

import (
	"sync/atomic"
	"syscall"

	ring "github.com/goxio/goxio/offload/shm"
)

// The connection's state machine. Every change of a connection's state is one of the
// transitions below, made with a compare-and-swap on one word, so that a transition sees the
// state it starts from and nothing it depends on changes in between; the other files only read
// the state (phase, has, ended, ...).
//
// Each direction has one phase:
//
//	             rxToK                  rxSwitch               rxGoBack
//	rx: kernel --------> toK (up to K) ----------> ring -------------------> back
//	     (the kernel's bytes are data)   (K read)   (the peer went back at a fork)
//
//	             txSwitch             txGoBack
//	tx: kernel ----------> ring -----------------> back
//	      |  txNever (a fork or a withdrawal before our switch)
//	      +--------------> never
//
// and flags that are facts of the direction, orthogonal to its phase: the program's shutdown
// of it (flagShut), for tx a wake byte owed to the peer's writer until our switch (flagOwed)
// and a fork that found a send in progress (flagBackWanted), for rx the kernel's EOF seen
// before the reader's switch (flagKernEOF).
//
// The end of the connection (closed by the program, the peer gone without a word, a reset
// reported) is one socket-wide word, not a phase of a direction: a direction that ended keeps
// its phase, because what may still happen on the kernel socket depends on it (a direction
// back on the kernel must never get a wake byte, even from a call that races with Close).
//
// Establishment (estab.go) has its own three steps: not started, running, done.

// phase is where one direction's bytes flow.
type phase uint32

//go:generate go tool stringer -type=phase -trimprefix=phase

const (
	// phaseKernel: before the switch; every byte of the direction is the kernel's. For rx the
	// peer's K is not known yet (the peer has not switched, or we have not looked).
	phaseKernel phase = iota
	// phaseToK (rx only): the peer switched at K; kernel bytes before K are data, those after
	// it wake-ups. rxK holds K (stored before the phase, under rxmu).
	phaseToK
	// phaseRing: the direction runs on the ring; the kernel socket carries wake bytes only.
	phaseRing
	// phaseBack: back on the kernel after a fork, for good (back.go). tx: no ring write and no
	// wake byte after it. rx: the ring was read to its end and the kernel bytes up to the
	// peer's count were discarded; receives read the kernel.
	phaseBack
	// phaseNever (tx only): on the kernel for good without ever switching (a fork before our
	// switch, or a withdrawal).
	phaseNever
)

// Flags of a direction's word, above its phase.
const (
	phaseMask uint32 = 0xff
	// flagShut: the program shut the direction down (SHUT_WR for tx, SHUT_RD for rx).
	flagShut uint32 = 1 << 8
	// flagOwed (tx): a read freed space for the peer's waiting writer before our switch, when
	// no wake byte may be sent yet (it would be data before K); txSwitch sends it.
	flagOwed uint32 = 1 << 9
	// flagBackWanted (tx): a fork found a send in progress; the send goes back when it returns.
	flagBackWanted uint32 = 1 << 10
	// flagKernEOF (rx): a receive before the reader's switch got the kernel's EOF.
	flagKernEOF uint32 = 1 << 11
)

// dirState is one direction's word: its phase and flags.
type dirState struct{ w atomic.Uint32 }

// phase is the direction's phase now.
func (s *dirState) phase() phase { return phase(s.w.Load() & phaseMask) }

// has reports whether flag is set.
func (s *dirState) has(flag uint32) bool { return s.w.Load()&flag != 0 }

// set sets flag; it reports whether it was set before.
func (s *dirState) set(flag uint32) bool { return s.w.Or(flag)&flag != 0 }

// move changes the phase from one of from to to, keeping the flags, and clears the flags in
// clear; it returns the word before the change and whether the change happened (false: the
// phase was none of from).
func (s *dirState) move(to phase, clear uint32, from ...phase) (uint32, bool) {
	for {
		old := s.w.Load()
		ok := false
		for _, f := range from {
			ok = ok || phase(old&phaseMask) == f
		}
		if !ok {
			return old, false
		}
		if s.w.CompareAndSwap(old, old&^(phaseMask|clear)|uint32(to)) {
			return old, true
		}
	}
}

// switched reports whether the direction switched to the ring at some point (it is on the ring
// or went back after it).
func (s *dirState) switched() bool {
	p := s.phase()
	return p == phaseRing || p == phaseBack
}

// The end of the connection, socket-wide.
const (
	// endClosed: the program closed the socket's last fd (Close).
	endClosed uint32 = 1 << iota
	// endGoneEOF, endGoneReset: the kernel connection ended (EOF or an error on a wake-up read)
	// while the peer's segment state said nothing (killed, exited): a receive that drained the
	// ring then gets EOF, or a reset when the peer died with our data unread. Decided once.
	endGoneEOF
	endGoneReset
	// endResetSeen: a receive or send reported ECONNRESET (the kernel reports a reset once:
	// after it receives return 0 and sends fail with EPIPE).
	endResetSeen
	// endWakeReset: with endGoneEOF, the kernel reported a reset that our own wake bytes,
	// left unread by the dead peer, caused (kernelEnded); endSendAbsorbed: the first send
	// after it was accepted (absorbSend).
	endWakeReset
	endSendAbsorbed

	endGone = endGoneEOF | endGoneReset
)

// endState is the connection's end word.
type endState struct{ w atomic.Uint32 }

// closed reports whether the program closed the socket.
func (e *endState) closed() bool { return e.w.Load()&endClosed != 0 }

// gone is endGoneEOF, endGoneReset or 0.
func (e *endState) gone() uint32 { return e.w.Load() & endGone }

// resetSeen reports whether a reset was reported to the program.
func (e *endState) resetSeen() bool { return e.w.Load()&endResetSeen != 0 }

// Establishment steps (estab.go).
const (
	estNone    uint32 = iota // Established has not started: data calls go to the kernel, counted
	estRunning               // it runs (opening the segment): data calls wait for its outcome
	estDone                  // it ended: conn holds the outcome (stored before this step)
)

// Transitions. Each says what it keeps true and who may call it.

// rxToK moves the receive side to phaseToK once the peer switched: the kernel bytes from the
// peer's K on are wake-ups. rxK is stored before the phase, both under rxmu (every reader of
// rxK holds it). rxmu is held.
func (t *TCP) rxToK(k uint64) {
	if t.rx.phase() != phaseKernel {
		return
	}
	t.rxK = k
	t.rx.move(phaseToK, 0, phaseKernel)
}

// rxSwitch moves the receive side to the ring once exactly K kernel bytes were read (or the
// peer's K is below what we read: a broken peer, whose ring then decides). It reports whether
// receives read the ring (or went past it). rxmu is held: kRx does not change meanwhile.
func (t *TCP) rxSwitch() bool {
	switch t.rx.phase() {
	case phaseRing, phaseBack:
		return true
	case phaseToK:
		if t.kRx >= t.rxK {
			t.rx.move(phaseRing, 0, phaseToK)
			return true
		}
	}
	return false
}

// rxGoBack moves the receive side back to the kernel after the peer went back: the ring was read
// to its end and the kernel bytes up to the peer's count (its K and every wake byte) were taken,
// so every kernel byte from now on is data. rxmu is held.
func (t *TCP) rxGoBack() {
	t.rx.move(phaseBack, 0, phaseRing)
}

// txSwitch moves our writes to the ring after conn.SwitchWrite published K: txmu is held, so no
// kernel send runs and K is exact. A wake byte a read owed the peer is sent now (flagOwed is
// cleared by the same swap: txOweWake set it before the switch, or sends it itself after).
// It reports false when the phase was not phaseKernel (never, or the socket moved on).
func (t *TCP) txSwitch(fd int) bool {
	old, ok := t.tx.move(phaseRing, flagOwed, phaseKernel)
	if ok && old&flagOwed != 0 {
		t.wake(fd)
	}
	return ok
}

// txOweWake sends the wake-up a read owes the peer's waiting writer. Before our switch a byte
// would be read as data before K: it is owed (flagOwed, set only while the phase is
// phaseKernel, in the same word txSwitch swaps), and txSwitch sends it. After going back or
// never switching, the kernel's own flow control wakes the peer: nothing is sent.
func (t *TCP) txOweWake(fd int) {
	for {
		old := t.tx.w.Load()
		switch phase(old & phaseMask) {
		case phaseRing:
			t.wake(fd)
			return
		case phaseKernel:
			if old&flagOwed != 0 || t.tx.w.CompareAndSwap(old, old|flagOwed) {
				return
			}
		default:
			return
		}
	}
}

// txShut records the program's shutdown of our writing side (SHUT_WR): no switch after it (the
// kernel's FIN ends a direction that never switched), and sends fail with EPIPE.
func (t *TCP) txShut() { t.tx.set(flagShut) }

// rxShut records the program's shutdown of our reading side (SHUT_RD): receives after the
// switch return what is queued, then 0.
func (t *TCP) rxShut() { t.rx.set(flagShut) }

// txWantBack records a fork that found a send in progress: the send goes back to the kernel
// when it returns (maybeBackWrite), or, before our switch, our writes never switch.
func (t *TCP) txWantBack() { t.tx.set(flagBackWanted) }

// rxKernelEOF records the kernel's EOF seen by a receive before the reader's switch: a peer
// that never switched its writes ended them (peerEnded).
func (t *TCP) rxKernelEOF() { t.rx.set(flagKernEOF) }

// txNever keeps our writes on the kernel for good: a fork or a withdrawal came before our
// switch. txmu is held (or the segment is being given up).
func (t *TCP) txNever() {
	t.tx.move(phaseNever, flagOwed, phaseKernel)
}

// txGoBack moves our writes back to the kernel after a fork, under wakemu (which every wake byte
// is sent under: no wake byte follows the count it returns). It returns the kernel bytes sent
// so far (K and every wake byte) and false when our writes were not on the ring. txmu is held
// (kTx does not change).
func (t *TCP) txGoBack() (uint64, bool) {
	t.wakemu.Lock()
	defer t.wakemu.Unlock()
	if _, ok := t.tx.move(phaseBack, flagBackWanted, phaseRing); !ok {
		return 0, false
	}
	return t.kTx + t.wakesTx.Load(), true
}

// close marks the socket closed; false when it already was. The phases stay (see above).
func (t *TCP) close() bool { return t.end.w.Or(endClosed)&endClosed == 0 }

// kernelEnded records the end of the kernel connection (the kernel's EOF, or errno e from a
// wake-up read). A peer that closed, shut down or reset set its segment state first: its state
// says how the stream ends. One that died (killed, exited without close) did not: then EOF, or
// a reset when it died with our data unread in its ring, as its kernel would have reset. A
// reset the kernel reported while none of our data was unread came from our own wake bytes
// that the peer left unread (its kernel resets a connection closed with unread bytes): its
// kernel would have ended with a FIN, after which a kernel TCP send is accepted once before the
// peer's reset comes back, so the first send is accepted without reaching the kernel
// (absorbSend: it would fail with EPIPE there, and raise SIGPIPE).
func (t *TCP) kernelEnded(conn *ring.Conn, e syscall.Errno) {
	if conn.PeerState()&(ring.StateWriteShut|ring.StateReset) != 0 {
		return
	}
	switch {
	case conn.Unread() > 0:
		t.peerGone(endGoneReset)
	case e != 0:
		t.peerGone(endGoneEOF | endWakeReset)
	default:
		t.peerGone(endGoneEOF)
	}
}

// absorbSend reports whether a send is the first one after kernelEnded saw a reset that our
// wake bytes caused (then the send is accepted without reaching the kernel); once only.
func (t *TCP) absorbSend() bool {
	for {
		old := t.end.w.Load()
		if old&endWakeReset == 0 || old&endSendAbsorbed != 0 {
			return false
		}
		if t.end.w.CompareAndSwap(old, old|endSendAbsorbed) {
			return true
		}
	}
}

// peerGone records how a peer that said nothing in its state ended, once: g is endGoneEOF or
// endGoneReset (with endWakeReset).
func (t *TCP) peerGone(g uint32) {
	for {
		old := t.end.w.Load()
		if old&endGone != 0 || t.end.w.CompareAndSwap(old, old|g) {
			return
		}
	}
}

// reportReset records that a reset is reported to the program now; false when one already
// was (the call then returns 0 or EPIPE).
func (t *TCP) reportReset() bool { return t.end.w.Or(endResetSeen)&endResetSeen == 0 }
