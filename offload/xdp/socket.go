package xdp

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Socket defaults (Config).
const (
	DefaultFrameSize = 2048
	DefaultRxFrames  = 2048
	DefaultTxFrames  = 2048
)

// BindMode says which AF_XDP data path Open asks for.
type BindMode uint8

// Bind modes.
const (
	BindAuto     BindMode = iota // zero-copy, then copy when the driver refuses
	BindZeroCopy                 // zero-copy only
	BindCopy                     // copy only
)

// Config tunes Open. The zero value is valid; sizes must be powers of two.
type Config struct {
	// FrameSize is the size of one UMEM frame, 2048 or 4096 (DefaultFrameSize when 0).
	// It bounds the Ethernet frames the socket carries: FrameSize bytes on transmit,
	// FrameSize-256 on receive (the kernel keeps XDP_PACKET_HEADROOM in front of a
	// received frame; a longer one is dropped and counted in KernelRxDropped).
	FrameSize int
	// RxFrames and TxFrames are the sizes of the RX and TX frame pools
	// (DefaultRxFrames, DefaultTxFrames when 0). The fill and RX rings have RxFrames
	// entries, the TX and completion rings TxFrames.
	RxFrames, TxFrames int
	// Mode chooses zero-copy, copy, or zero-copy falling back to copy.
	Mode BindMode
	// BusyPollMicros, when > 0, asks for busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL
	// with this many microseconds, SO_BUSY_POLL_BUDGET BusyPollBudget or 64); the
	// options the kernel refuses are left out and BusyPoll reports false.
	BusyPollMicros int
	BusyPollBudget int
}

// Socket is an AF_XDP socket bound to one queue of one interface, with its UMEM and
// rings. Receive and Release form its receive side, Alloc, Transmit, Free and Complete
// its transmit side: each side must be used by one goroutine at a time, and the two
// sides may run concurrently. Stats, Accounting and the accessors are safe from any
// goroutine; Close must not run concurrently with anything else.
type Socket struct {
	fd         int
	ifindex    int
	queue      int
	zeroCopy   bool
	needWakeup bool
	busyPoll   bool
	umem       *umem
	fill, comp ring
	rx, tx     ring
	counters   counters
}

// Open creates an AF_XDP socket on receive queue queue of interface ifindex (in the
// calling thread's network namespace), with its UMEM, and binds it (zero-copy first,
// then copy mode, as cfg.Mode says; with need_wakeup when the kernel has it). Every RX
// frame is posted on the fill ring. The socket receives nothing until it is
// registered with a Program (Program.Register) for its queue; it can transmit at once.
//
// A queue that has a socket already gives an error wrapping unix.EBUSY. As the kernel
// releases a closed socket's queue in deferred work, Open retries EBUSY for up to
// busyRetries*busyRetryNanos (200 ms) before it gives up. A driver without zero-copy
// gives an error wrapping ErrNotSupported for BindZeroCopy; missing CAP_NET_RAW one
// wrapping unix.EPERM.
func Open(ifindex, queue int, cfg Config) (*Socket, error) {
	fs, rxN, txN, err := cfg.sizes()
	if err != nil {
		return nil, fmt.Errorf("xsk open %d/%d: %w", ifindex, queue, err)
	}
	if ifindex <= 0 || queue < 0 {
		return nil, fmt.Errorf("xsk open %d/%d: %w", ifindex, queue, unix.EINVAL)
	}
	u, err := newUMEM(fs, rxN, txN)
	if err != nil {
		return nil, fmt.Errorf("xsk open %d/%d: %w", ifindex, queue, err)
	}
	var flagSets []uint16
	switch cfg.Mode {
	case BindAuto:
		flagSets = []uint16{unix.XDP_ZEROCOPY, unix.XDP_COPY}
	case BindZeroCopy:
		flagSets = []uint16{unix.XDP_ZEROCOPY}
	case BindCopy:
		flagSets = []uint16{unix.XDP_COPY}
	default:
		u.close()
		return nil, fmt.Errorf("xsk open %d/%d: bind mode %d: %w", ifindex, queue, cfg.Mode, unix.EINVAL)
	}
	var errs []error
	for _, flags := range flagSets {
		s := &Socket{fd: -1, ifindex: ifindex, queue: queue, umem: u}
		err := s.setup(flags, cfg)
		for try := 0; errors.Is(err, unix.EBUSY) && try < busyRetries; try++ {
			// The kernel releases a closed socket's hold on its queue in deferred work
			// (10-30 ms on a small VM): a queue closed just before is busy for a while.
			s.closeSocket()
			unix.Nanosleep(&unix.Timespec{Nsec: busyRetryNanos}, nil)
			err = s.setup(flags, cfg)
		}
		if err == nil {
			return s, nil
		}
		s.closeSocket()
		errs = append(errs, err)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EBUSY) {
			break // copy mode would fail the same way
		}
	}
	u.close()
	err = errors.Join(errs...)
	if errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EPERM) {
		err = fmt.Errorf("%w (%w)", ErrNotSupported, err)
	}
	return nil, fmt.Errorf("xsk open %d/%d: %w", ifindex, queue, err)
}

// sizes checks and completes the configuration.
func (cfg Config) sizes() (frameSize, rxN, txN uint32, err error) {
	fs, rx, tx := cfg.FrameSize, cfg.RxFrames, cfg.TxFrames
	if fs == 0 {
		fs = DefaultFrameSize
	}
	if rx == 0 {
		rx = DefaultRxFrames
	}
	if tx == 0 {
		tx = DefaultTxFrames
	}
	if fs != 2048 && fs != 4096 {
		return 0, 0, 0, fmt.Errorf("frame size %d, want 2048 or 4096: %w", fs, unix.EINVAL)
	}
	for _, n := range []int{rx, tx} {
		if n < 1 || n > 1<<20 || bits.OnesCount(uint(n)) != 1 {
			return 0, 0, 0, fmt.Errorf("pool of %d frames, want a power of two up to %d: %w", n, 1<<20, unix.EINVAL)
		}
	}
	return uint32(fs), uint32(rx), uint32(tx), nil
}

// setup creates the socket, registers the UMEM, creates and maps the rings, sets the
// busy-poll options, binds with bindFlags and posts the RX pool on the fill ring.
func (s *Socket) setup(bindFlags uint16, cfg Config) error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket AF_XDP: %w", err)
	}
	s.fd = fd
	u := s.umem
	if err := registerUMEM(fd, u.mem, uint32(u.frameSize)); err != nil {
		return err
	}
	sizes := []struct {
		opt int
		n   uint32
	}{
		{unix.XDP_UMEM_FILL_RING, u.rxFrames},
		{unix.XDP_UMEM_COMPLETION_RING, u.txFrames},
		{unix.XDP_RX_RING, u.rxFrames},
		{unix.XDP_TX_RING, u.txFrames},
	}
	for _, r := range sizes {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, int(r.n)); err != nil {
			return fmt.Errorf("setsockopt ring %d of %d entries: %w", r.opt, r.n, err)
		}
	}
	off, err := mmapOffsets(fd)
	if err != nil {
		return err
	}
	maps := []struct {
		r       *ring
		off     unix.XDPRingOffset
		pgoff   int64
		n       uint32
		entSize int
	}{
		{&s.fill, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, u.rxFrames, addrEntrySize},
		{&s.comp, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, u.txFrames, addrEntrySize},
		{&s.rx, off.Rx, unix.XDP_PGOFF_RX_RING, u.rxFrames, descEntrySize},
		{&s.tx, off.Tx, unix.XDP_PGOFF_TX_RING, u.txFrames, descEntrySize},
	}
	for _, m := range maps {
		length := int(m.off.Desc) + int(m.n)*m.entSize
		mem, err := unix.Mmap(fd, m.pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("mmap ring at %#x: %w", m.pgoff, err)
		}
		if err := m.r.mapRing(mem, m.off, m.n, m.entSize); err != nil {
			unix.Munmap(mem)
			return fmt.Errorf("map ring at %#x: %w", m.pgoff, err)
		}
	}
	if cfg.BusyPollMicros > 0 {
		budget := cfg.BusyPollBudget
		if budget <= 0 {
			budget = 64
		}
		s.busyPoll = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1) == nil &&
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, cfg.BusyPollMicros) == nil &&
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET, budget) == nil
	}
	// Copy mode sends at most a per-call budget of frames per sendto; let one kick send
	// the whole ring where the kernel allows it (Linux 6.15+, XDP_MAX_TX_SKB_BUDGET).
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, xdpMaxTxSkbBudget, int(u.txFrames))

	sa := &unix.SockaddrXDP{Flags: bindFlags | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(s.ifindex), QueueID: uint32(s.queue)}
	err = unix.Bind(fd, sa)
	if errors.Is(err, unix.EINVAL) {
		sa.Flags = bindFlags // a kernel without need_wakeup
		err = unix.Bind(fd, sa)
	}
	if err != nil {
		return fmt.Errorf("bind AF_XDP ifindex %d queue %d %s: %w", s.ifindex, s.queue, bindFlagName(bindFlags), err)
	}
	s.needWakeup = sa.Flags&unix.XDP_USE_NEED_WAKEUP != 0
	opts, err := socketOptions(fd)
	if err != nil {
		return err
	}
	s.zeroCopy = opts&unix.XDP_OPTIONS_ZEROCOPY != 0

	// Post the whole RX pool; the fill ring has room for all of it.
	n := s.fill.free(u.rxFrames)
	if n != u.rxFrames {
		return fmt.Errorf("fill ring has room for %d of %d frames: %w", n, u.rxFrames, unix.EIO)
	}
	for i := range n {
		s.fill.setAddrAt(s.fill.localProd+i, uint64(i)*u.frameSize)
	}
	s.fill.submit(n)
	return nil
}

// Open's retries of a busy queue: 40 times 5 ms.
const (
	busyRetries    = 40
	busyRetryNanos = 5_000_000
)

// xdpMaxTxSkbBudget is the SOL_XDP option that raises copy mode's per-call send budget.
const xdpMaxTxSkbBudget = 9

// bindFlagName names the data path of a bind.
func bindFlagName(f uint16) string {
	if f&unix.XDP_ZEROCOPY != 0 {
		return "zero-copy"
	}
	return "copy"
}

// closeSocket unmaps the rings and closes the socket, leaving the UMEM.
func (s *Socket) closeSocket() error {
	var first error
	for _, r := range []*ring{&s.fill, &s.comp, &s.rx, &s.tx} {
		if err := r.unmap(); err != nil && first == nil {
			first = fmt.Errorf("munmap ring: %w", err)
		}
	}
	if s.fd >= 0 {
		if err := unix.Close(s.fd); err != nil && first == nil {
			first = fmt.Errorf("close: %w", err)
		}
		s.fd = -1
	}
	return first
}

// Close closes the socket (the kernel removes it from the program's socket map) and
// unmaps its rings and UMEM: every Frame handed out becomes invalid, and touching its
// Data faults. Close twice is harmless.
func (s *Socket) Close() error {
	err := s.closeSocket()
	if s.umem != nil {
		if uerr := s.umem.close(); uerr != nil && err == nil {
			err = fmt.Errorf("munmap umem: %w", uerr)
		}
	}
	if err != nil {
		return fmt.Errorf("xsk close %d/%d: %w", s.ifindex, s.queue, err)
	}
	return nil
}

// FD returns the socket's file descriptor: poll it for POLLIN (frames on the RX ring)
// or POLLOUT (room on the TX ring). It stays owned by the Socket.
func (s *Socket) FD() int { return s.fd }

// Ifindex returns the interface the socket is bound to.
func (s *Socket) Ifindex() int { return s.ifindex }

// Queue returns the queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// ZeroCopy reports whether the driver works in zero-copy mode (else copy mode).
func (s *Socket) ZeroCopy() bool { return s.zeroCopy }

// NeedWakeup reports whether the socket was bound with XDP_USE_NEED_WAKEUP, so that it
// makes a system call only when the kernel asks for one.
func (s *Socket) NeedWakeup() bool { return s.needWakeup }

// BusyPoll reports whether the busy-poll options asked for in Config were accepted.
func (s *Socket) BusyPoll() bool { return s.busyPoll }

// FrameSize returns the size of one UMEM frame, the largest frame the socket carries.
func (s *Socket) FrameSize() int { return int(s.umem.frameSize) }

// Accounting says where the socket's frames are (safe from any goroutine; the numbers
// of a side that is running at the same time may be one batch old).
func (s *Socket) Accounting() Accounting { return s.umem.accounting() }

// counters are the socket's own statistics, each written by one side only.
type counters struct {
	rxPackets, rxBytes, rxInvalid, rxWakeups atomic.Uint64
	txPackets, txBytes, txCompleted          atomic.Uint64
	compInvalid, txWakeups, txWakeupErrors   atomic.Uint64
}
