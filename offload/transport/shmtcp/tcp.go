package shmtcp

import (
	"github.com/goxio/goxio/offload/internal/wait"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// TCP is one connected TCP socket on the shared-memory transport. The engine makes it with the
// socket (Env.NewTCP), tells it when the kernel connection is established (Established), passes
// it every data call (Transfer), the options it follows (OptionSet), shutdown (Shutdown) and the
// close of the socket's last fd (Close).
//
// Locks: txmu serializes the socket's sends (the switch needs "no kernel send in progress"),
// rxmu the non-blocking steps of its receives; sleeping calls hold neither. Lock order: txmu
// before rxmu; the Conn's own mutexes are taken inside both.
type TCP struct {
	env      *Env
	nonblock func() bool
	server   bool
	accepted bool // made by accept (Accepted, before the socket is shared): the server's end

	// conn is the connection segment; nil before Established, when OpenConn failed, after a
	// withdrawal and after Close: every call then goes to the kernel socket as it is.
	conn atomic.Pointer[ring.Conn]
	side int
	born int64 // nanotime of Established

	// Established runs once, under estmu; est is its step (estNone, estRunning, estDone). A
	// data call before it (early) goes to the kernel as a call of an unpaired socket and is
	// counted in early while it runs; one that finds it running waits for estmu, then uses the
	// outcome. Established pairs only when no such call runs and none moved a byte (estab.go).
	estmu sync.Mutex
	est   atomic.Uint32
	early atomic.Int32

	// Late pairing through the pairing table (late.go): pair is the connecting end's
	// registration, calls counts its data calls until it makes the segment; pairEnds are the
	// connection's endpoints (local, remote) once the engine gave them (GoxioPeer, Ends);
	// viaTable says that the two ends know each other from the table, so kernel bytes may flow
	// before the segment (counted into K) and the peer's early bytes are no sign of a stranger.
	pair       ring.PairEntry
	calls      atomic.Int32
	pairEnds   [2]netip.AddrPort
	acceptedAt int64
	viaTable   atomic.Bool

	// The state machine (state.go): each direction's phase and flags, and the connection's end.
	rx, tx dirState
	end    endState

	txmu sync.Mutex
	kTx  uint64 // bytes sent through the kernel; guarded by txmu

	rxmu sync.Mutex
	kRx  uint64 // bytes read from the kernel (not peeked); guarded by rxmu
	rxK  uint64 // the peer's K once rx is past phaseKernel; guarded by rxmu

	sleepers atomic.Int32 // calls asleep in ppoll on a duplicate of the kernel socket
	// rxSleepers counts our threads asleep in the kernel waiting for data (a receive, select,
	// poll, epoll_wait): while there are any nobody takes a spin mark (SpinConn). Each sleeper
	// also registers on the segment (ring.Conn.SleepBegin: rxRegs of them, on sleepConn), so
	// the peer's writer sends its wake byte whatever marks other threads of ours took before (an
	// epoll set's awake marks); a sleeper that could not register (no segment yet when it went
	// to sleep) and finds marks sleeps 1 ms at a time (Marked). Sleep changes them under sleepmu.
	rxSleepers atomic.Int32
	sleepmu    sync.Mutex
	rxRegs     int32
	sleepConn  *ring.Conn

	waitAvg wait.Avg // how long blocking receives wait for bytes, typically (recv.go)
	// lastKernel is when a receive on the ring last looked at the kernel socket (recv.go).
	lastKernel atomic.Int64
	rcvTimeo   atomic.Int64 // SO_RCVTIMEO in ns; 0: none
	sndTimeo   atomic.Int64 // SO_SNDTIMEO in ns; 0: none
	linger0    atomic.Bool  // SO_LINGER on with 0 seconds: close resets

	ringTx, ringRx, kernTx, kernRx, wakesTx, wakesRx atomic.Uint64
	opts                                             atomic.Pointer[tcpOpts] // nodelay.go
	// withdrew: the connection had a segment and gave it up before any switch (statistics
	// only: no call reads it to choose its path).
	withdrew atomic.Bool

	// Going back to the kernel (back.go). wakemu: every wake byte is sent under it, and txGoBack
	// takes it, so the count published is exact. kConsumed counts every byte taken from the
	// kernel socket (data and wake bytes); rxStash holds kernel data a wake drain took after the
	// peer went back.
	wakemu    sync.Mutex
	kConsumed uint64 // guarded by rxmu
	rxStash   []byte // guarded by rxmu

	capEnds atomic.Pointer[capEnds] // the endpoints capture records name (capture.go)
}

// Kind is transport.KindSHM.
func (t *TCP) Kind() transport.Kind { return transport.KindSHM }

// Transfer performs a data call (Op.Receive or Op.Send) with the libc call's semantics.
func (t *TCP) Transfer(c transport.Call) (int, syscall.Errno) {
	n, errno, _ := t.TransferVia(c)
	return n, errno
}

// TransferVia performs a data call and reports whether its bytes went through the kernel (before
// the switch, or on a connection that never switched).
func (t *TCP) TransferVia(c transport.Call) (int, syscall.Errno, bool) {
	if t.conn.Load() == nil {
		if t.est.Load() != estDone {
			return t.transferEarly(c)
		}
		// Established stores the segment before estDone: a call that loaded conn before the
		// store and estDone after it looks again, or it would make a kernel call on a paired
		// connection (a receive taking the peer's wake bytes as data, a send missing from K).
		if t.conn.Load() != nil {
			return t.TransferVia(c)
		}
		n, errno := kernel.Do(&c)
		t.countKernel(&c, n, errno)
		return n, errno, true
	}
	if c.Op.Receive() {
		return t.recv(&c)
	}
	return t.send(&c)
}

// countKernel counts a call that went to the kernel unchanged.
func (t *TCP) countKernel(c *transport.Call, n int, errno syscall.Errno) {
	if errno != 0 || n <= 0 {
		return
	}
	if c.Op.Receive() {
		if !peekCall(c) {
			t.kernRx.Add(uint64(n))
		}
	} else if c.Op.Send() {
		t.kernTx.Add(uint64(n))
	}
}

// trySwitchWrite switches our writes to the ring when we may: side 0 once the peer attached,
// side 1 once side 0 switched (its commitment). txmu is held. Reports whether sends go to the
// ring now.
func (t *TCP) trySwitchWrite(fd int, conn *ring.Conn) bool {
	switch t.tx.phase() {
	case phaseRing, phaseBack:
		return true
	case phaseNever:
		return false
	}
	if t.tx.has(flagShut) {
		return false // shut before the switch: the kernel's FIN ends our direction
	}
	if t.tx.has(flagBackWanted) {
		// A fork came while a send (on the kernel) was in progress: the child writes the
		// kernel socket too, so our writes never switch.
		t.txNever()
		return false
	}
	if t.side == 0 {
		if !conn.PeerAttached() {
			return false
		}
	} else if _, ok := conn.ReaderSwitch(); !ok {
		return false
	}
	t.takeTCPOptions(fd)
	if err := conn.SwitchWrite(t.kTx); err != nil {
		return false
	}
	t.pair.Drop() // the peer attached: the table has nothing more to tell it
	return t.txSwitch(fd)
}

// settle is the pairing step every call before our write switch makes: commit (switch our
// writes) when the peer is there, withdraw when it will not come, follow a creator that
// withdrew. dataSeen: this call just read kernel bytes from the peer. Returns the segment, nil
// when the connection is on the kernel for good.
func (t *TCP) settle(fd int, conn *ring.Conn, dataSeen bool) *ring.Conn {
	if conn == nil || t.tx.switched() {
		return conn
	}
	if t.side == 1 {
		// The creator withdrew if it closed without ever switching (state first, then K: a
		// switch precedes the close's state store).
		if conn.PeerState()&ring.StateClosed != 0 {
			if _, ok := conn.ReaderSwitch(); !ok {
				t.env.ctr.peerWithdrew.Add(1)
				t.withdraw(conn)
				return nil
			}
		}
		if t.txmu.TryLock() {
			t.trySwitchWrite(fd, conn)
			t.txmu.Unlock()
		}
		return conn
	}
	if !t.txmu.TryLock() {
		return conn // a send is in progress; it settles itself
	}
	defer t.txmu.Unlock()
	if t.trySwitchWrite(fd, conn) {
		return conn
	}
	switch {
	case dataSeen && !t.viaTable.Load():
		t.env.ctr.withdrawnData.Add(1)
	case nanotime()-t.born > int64(t.env.p.AttachGrace):
		t.env.ctr.withdrawnGrace.Add(1)
	default:
		return conn
	}
	t.withdraw(conn)
	return nil
}

// withdraw gives the segment up before any switch of ours: the connection is the kernel's for
// good.
func (t *TCP) withdraw(conn *ring.Conn) {
	if t.conn.CompareAndSwap(conn, nil) {
		t.txNever()
		t.withdrew.Store(true)
		_, _ = conn.Close()
	}
}

// OptionSet tells the socket that the program set an option on its kernel socket fd; the ones
// the transport follows are read back from the kernel (SO_RCVTIMEO, SO_SNDTIMEO, SO_LINGER,
// TCP_NODELAY and TCP_CORK: see nodelay.go).
func (t *TCP) OptionSet(fd, level, name int) {
	if level == unix.IPPROTO_TCP {
		t.tcpOptionSet(fd, name)
		return
	}
	if level != unix.SOL_SOCKET {
		return
	}
	switch name {
	case unix.SO_RCVTIMEO, unix.SO_RCVTIMEO_NEW:
		if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
			t.rcvTimeo.Store(tv.Nano())
		}
	case unix.SO_SNDTIMEO, unix.SO_SNDTIMEO_NEW:
		if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil {
			t.sndTimeo.Store(tv.Nano())
		}
	case unix.SO_LINGER:
		if l, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER); err == nil {
			t.linger0.Store(l.Onoff != 0 && l.Linger == 0)
		}
	}
}

// Shutdown tells the socket that the program calls shutdown(fd, how); call it before the kernel
// shutdown. SHUT_WR: the peer reads EOF after what we wrote (our later sends fail with EPIPE);
// SHUT_RD: our receives return what is queued, then 0.
func (t *TCP) Shutdown(fd, how int) {
	conn := t.conn.Load()
	if how == unix.SHUT_WR || how == unix.SHUT_RDWR {
		// A sender asleep waiting for ring space holds txmu: the switch is only tried when no
		// send is in progress, and the sleeper sees flagShut within maxWriterSleep (EPIPE).
		if conn != nil && t.tx.phase() == phaseKernel && t.txmu.TryLock() {
			t.trySwitchWrite(fd, conn)
			t.txmu.Unlock()
		}
		t.txShut()
		if conn != nil && t.txRing() && conn.ShutdownWrite() {
			t.wake(fd)
		}
	}
	if how == unix.SHUT_RD || how == unix.SHUT_RDWR {
		t.rxShut()
		if conn != nil {
			conn.ShutdownRead()
		}
	}
}

// Close ends the socket when its last fd goes; call it before closing the kernel socket fd. With
// unread ring data or SO_LINGER 0 the peer sees a reset (as the kernel resets such a
// connection), otherwise our data then EOF. Wake bytes still queued on the kernel socket are
// drained first so the kernel's close does not turn them into a reset. Calls asleep in the
// transport on this socket are woken (receives return 0, sends EPIPE).
func (t *TCP) Close(fd int) {
	if !t.close() {
		return
	}
	t.pair.Drop()
	if conn := t.conn.Swap(nil); conn != nil {
		var wake bool
		if t.linger0.Load() || (t.rx.switched() && conn.Readable() > 0) {
			wake, _ = conn.Abort()
		} else {
			wake, _ = conn.Close()
		}
		if wake && t.tx.switched() {
			t.wake(fd)
		}
		if t.rx.phase() == phaseRing {
			t.rxmu.Lock()
			t.drainWakes(fd, nil)
			t.rxmu.Unlock()
		}
	}
	if t.sleepers.Load() > 0 {
		_ = unix.Shutdown(fd, unix.SHUT_RD)
	}
}

// wake sends one wake byte to the peer on the kernel connection (never blocking, never a
// signal). A full send buffer already holds wake-ups the peer has not read: dropping this one
// loses nothing.
func (t *TCP) wake(fd int) {
	t.wakemu.Lock()
	defer t.wakemu.Unlock()
	if t.tx.phase() == phaseBack {
		return // our direction is the kernel's again: a byte would be data
	}
	if sendByte(fd) == 0 {
		t.wakesTx.Add(1)
		wait.Woke()
	}
}

// drainWakes reads the wake bytes queued on the kernel socket after the peer's switch; it
// reports what ended the drain: 0 (nothing more for now), or the kernel's EOF or error. Bytes
// beyond the count of a peer that went back (conn, when not nil) are data: they are kept in
// rxStash for the next receive. rxmu is held.
func (t *TCP) drainWakes(fd int, conn *ring.Conn) (eof bool, errno syscall.Errno) {
	var b [64]byte
	for range 64 {
		if t.rxStash != nil {
			return false, 0
		}
		n, e := recvScratch(fd, &b, unix.MSG_DONTWAIT)
		if e == 0 && n > 0 {
			t.kConsumed += uint64(n)
			if conn != nil {
				if sent, ok := conn.PeerWriteBack(); ok && t.kConsumed > sent {
					keep := int(min(t.kConsumed-sent, uint64(n)))
					t.rxStash = append([]byte(nil), b[n-keep:n]...)
					n -= keep
				}
			}
		}
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return false, 0
		case e != 0:
			return false, e
		case n == 0:
			return true, 0
		}
		t.wakesRx.Add(uint64(n))
		if n < len(b) {
			return false, 0
		}
	}
	return false, 0
}

func optInt(fd, name int) int {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, name)
	if err != nil {
		return 0
	}
	return v
}

// sockname is the socket's local (or peer) address; the zero value when unknown.
func sockname(fd int, peer bool) netip.AddrPort {
	if peer {
		return sysc.Peername(fd)
	}
	return sysc.Sockname(fd)
}
