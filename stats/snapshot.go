package stats

import (
	"net/netip"
	"strconv"
	"time"
)

// SocketCounters are the counters and gauges of one socket. Counter fields
// say when they increment in the Counter constants of the same name.
type SocketCounters struct {
	RxPackets      uint64 `json:"rx_packets"`
	RxBytes        uint64 `json:"rx_bytes"`
	RxEAGAIN       uint64 `json:"rx_eagain"`
	RxErrors       uint64 `json:"rx_errors"`
	RxOSPackets    uint64 `json:"rx_os_packets"`
	RxOSBytes      uint64 `json:"rx_os_bytes"`
	RxOSEAGAIN     uint64 `json:"rx_os_eagain"`
	RxOSErrors     uint64 `json:"rx_os_errors"`
	TxPackets      uint64 `json:"tx_packets"`
	TxBytes        uint64 `json:"tx_bytes"`
	TxEAGAIN       uint64 `json:"tx_eagain"`
	TxErrors       uint64 `json:"tx_errors"`
	TxOSPackets    uint64 `json:"tx_os_packets"`
	TxOSBytes      uint64 `json:"tx_os_bytes"`
	TxOSEAGAIN     uint64 `json:"tx_os_eagain"`
	TxOSErrors     uint64 `json:"tx_os_errors"`
	TxDrops        uint64 `json:"tx_drops"`
	RxDropPackets  uint64 `json:"rx_drop_packets"`
	RxDropBytes    uint64 `json:"rx_drop_bytes"`
	PollHit        uint64 `json:"poll_hit"`
	PollMiss       uint64 `json:"poll_miss"`
	Retransmits    uint64 `json:"retransmits"`
	RxZcopy        uint64 `json:"rx_zcopy"`             // datagrams handed over in place
	RxQueuePackets uint64 `json:"rx_queue_packets"`     // gauge: datagrams/segments waiting now
	RxQueuePktsMax uint64 `json:"rx_queue_packets_max"` // gauge: most seen since open or zeroing
	RxQueueBytes   uint64 `json:"rx_queue_bytes"`       // gauge: bytes waiting now
	RxQueueByteMax uint64 `json:"rx_queue_bytes_max"`   // gauge: most seen since open or zeroing
	TxQueueBytes   uint64 `json:"tx_queue_bytes"`       // gauge: bytes not yet taken by the peer
	RxHeld         uint64 `json:"rx_held"`              // gauge: records handed over in place, not yet freed
}

// counterFields lists the counter fields in Counter order (gauges apart), so
// deltas and zero checks walk them generically.
func (c *SocketCounters) counterFields() []*uint64 {
	return []*uint64{&c.RxPackets, &c.RxBytes, &c.RxEAGAIN, &c.RxErrors,
		&c.RxOSPackets, &c.RxOSBytes, &c.RxOSEAGAIN, &c.RxOSErrors,
		&c.TxPackets, &c.TxBytes, &c.TxEAGAIN, &c.TxErrors,
		&c.TxOSPackets, &c.TxOSBytes, &c.TxOSEAGAIN, &c.TxOSErrors,
		&c.TxDrops, &c.RxDropPackets, &c.RxDropBytes, &c.PollHit, &c.PollMiss, &c.Retransmits,
		&c.RxZcopy}
}

// Delta returns c minus prev for the counters (gauges are taken from c).
// A counter that went down (zeroed in between) gives its current value.
func (c SocketCounters) Delta(prev SocketCounters) SocketCounters {
	d := c
	cur, old, out := c.counterFields(), prev.counterFields(), d.counterFields()
	for i := range cur {
		if *cur[i] >= *old[i] {
			*out[i] = *cur[i] - *old[i]
		}
	}
	return d
}

// SocketSnapshot is a consistent copy of one socket slot.
type SocketSnapshot struct {
	Slot      int            `json:"slot"`
	Gen       uint64         `json:"generation"` // changes each time the slot is reused
	FD        int            `json:"fd"`
	Inode     uint64         `json:"inode"`
	Family    int            `json:"family"`
	Type      int            `json:"type"`
	Protocol  int            `json:"protocol"`
	State     TCPState       `json:"tcp_state,omitempty"`
	Blocking  bool           `json:"blocking"`
	Local     netip.AddrPort `json:"local,omitzero"`
	Peer      netip.AddrPort `json:"peer,omitzero"`
	Transport Transport      `json:"transport"`
	Reason    Reason         `json:"reason"`
	RuleLine  int            `json:"rule_line,omitempty"`
	Rule      string         `json:"rule,omitempty"`
	Opened    time.Time      `json:"opened"`
	RxLimit   uint64         `json:"rx_limit_bytes"`
	Groups    []netip.Addr   `json:"groups,omitempty"`
	Counters  SocketCounters `json:"counters"`

	mcMap [mcMapWords]uint64
}

// Proto returns "tcp", "udp", "raw" or "???" from the socket type.
func (s SocketSnapshot) Proto() string {
	switch s.Type {
	case 1:
		return "tcp"
	case 2:
		return "udp"
	case 3:
		return "raw"
	}
	return "???"
}

// decodeSocket turns a consistent copy of a socket slot into a snapshot.
// It returns false for a free slot.
func decodeSocket(idx int, p []uint64) (SocketSnapshot, bool) {
	flags := p[sFlags]
	if flags&flagInUse == 0 {
		return SocketSnapshot{}, false
	}
	kind := p[sKind]
	rw := p[sReason]
	s := SocketSnapshot{
		Slot:      idx,
		Gen:       p[sGen],
		FD:        int(int32(p[sFD])),
		Inode:     p[sInode],
		Family:    int(uint16(kind)),
		Type:      int(uint16(kind >> 16)),
		Protocol:  int(uint16(kind >> 32)),
		State:     TCPState(kind >> 48),
		Transport: Transport(kind >> 56),
		Blocking:  flags&flagBlocking != 0,
		Reason:    Reason(rw),
		RuleLine:  int(uint32(rw >> 32)),
		Rule:      loadString(p[sRule:sRuleEnd]),
		RxLimit:   p[sRxLimit],
	}
	if t := int64(p[sOpened]); t > 0 {
		s.Opened = time.Unix(0, t)
	}
	ports := p[sPorts]
	if flags&flagLocal != 0 {
		s.Local = netip.AddrPortFrom(wordsAddr(p[sLocalHi], p[sLocalLo], flags&flagLocal4 != 0), uint16(ports))
	}
	if flags&flagPeer != 0 {
		s.Peer = netip.AddrPortFrom(wordsAddr(p[sPeerHi], p[sPeerLo], flags&flagPeer4 != 0), uint16(ports>>16))
	}
	f := s.Counters.counterFields()
	for i := range f {
		*f[i] = p[sCounters+i]
	}
	c := &s.Counters
	c.RxQueuePackets = p[gRxQueuePkts]
	c.RxQueuePktsMax = p[gRxQueuePktsMax]
	c.RxQueueBytes = p[gRxQueueBytes]
	c.RxQueueByteMax = p[gRxQueueBytesMax]
	c.TxQueueBytes = p[gTxQueueBytes]
	c.RxHeld = p[gRxHeld]
	copy(s.mcMap[:], p[sMcMap:sMcMapEnd])
	return s, true
}

// Snapshot returns a consistent copy of the socket's slot (for the engine's
// fd dumps). A nil or closed socket gives a zero snapshot with FD -1.
func (s *Socket) Snapshot() SocketSnapshot {
	if s == nil {
		return SocketSnapshot{FD: -1}
	}
	p := s.slot.Load()
	var buf [sockWords]uint64
	if p == s.w.sockScratch || !newSlotReader().Read(p[:], buf[:]) {
		return SocketSnapshot{FD: -1}
	}
	snap, ok := decodeSocket(s.idx, buf[:])
	if !ok {
		return SocketSnapshot{FD: -1}
	}
	s.w.mu.Lock()
	for _, e := range s.groups {
		ent := s.w.mcEntry(e)
		snap.Groups = append(snap.Groups, wordsAddr(ent[mcAddrHi], ent[mcAddrLo], ent[mcFlags]&flagLocal4 != 0))
	}
	s.w.mu.Unlock()
	return snap
}

// RingSnapshot is a consistent copy of one ring slot.
type RingSnapshot struct {
	Slot        int       `json:"slot"`
	Gen         uint64    `json:"generation"`
	ID          uint64    `json:"id"`
	Transport   Transport `json:"transport"`
	Name        string    `json:"name"`
	RxPackets   uint64    `json:"rx_packets"`
	RxBytes     uint64    `json:"rx_bytes"`
	TxPackets   uint64    `json:"tx_packets"`
	TxBytes     uint64    `json:"tx_bytes"`
	RxDrops     uint64    `json:"rx_drops"`
	TxDrops     uint64    `json:"tx_drops"`
	WakeRequest uint64    `json:"wake_requests"`
	WakeSent    uint64    `json:"wake_sent"`
	Retransmits uint64    `json:"retransmits"`
	RxQueue     uint64    `json:"rx_queue"`
	TxQueue     uint64    `json:"tx_queue"`
	// AF_XDP rings: the kernel's statistics (XDP_STATISTICS); zero for other rings.
	XDPRxDropped      uint64 `json:"xdp_rx_dropped"`
	XDPRxInvalidDescs uint64 `json:"xdp_rx_invalid_descs"`
	XDPTxInvalidDescs uint64 `json:"xdp_tx_invalid_descs"`
	XDPRxRingFull     uint64 `json:"xdp_rx_ring_full"`
	XDPFillRingEmpty  uint64 `json:"xdp_fill_ring_empty"`
	XDPTxRingEmpty    uint64 `json:"xdp_tx_ring_empty"`
}

// counterFields lists the counters in RingCounter order.
func (r *RingSnapshot) counterFields() []*uint64 {
	return []*uint64{&r.RxPackets, &r.RxBytes, &r.TxPackets, &r.TxBytes, &r.RxDrops,
		&r.TxDrops, &r.WakeRequest, &r.WakeSent, &r.Retransmits,
		&r.XDPRxDropped, &r.XDPRxInvalidDescs, &r.XDPTxInvalidDescs, &r.XDPRxRingFull,
		&r.XDPFillRingEmpty, &r.XDPTxRingEmpty}
}

// Delta returns r minus prev for the counters (gauges are taken from r).
func (r RingSnapshot) Delta(prev RingSnapshot) RingSnapshot {
	d := r
	if prev.Gen != r.Gen {
		return d
	}
	cur, old, out := r.counterFields(), prev.counterFields(), d.counterFields()
	for i := range cur {
		if *cur[i] >= *old[i] {
			*out[i] = *cur[i] - *old[i]
		}
	}
	return d
}

func decodeRing(idx int, p []uint64) (RingSnapshot, bool) {
	flags := p[rFlags]
	if flags&flagInUse == 0 {
		return RingSnapshot{}, false
	}
	r := RingSnapshot{Slot: idx, Gen: p[rGen], ID: p[rID], Transport: Transport(flags >> 8),
		Name: loadString(p[rName:rNameEnd]), RxQueue: p[rRxQueue], TxQueue: p[rTxQueue]}
	f := r.counterFields()
	for i := range f {
		*f[i] = p[ringWord(RingCounter(i))]
	}
	return r, true
}

// PoolSnapshot is a consistent copy of one buffer pool slot.
type PoolSnapshot struct {
	Slot    int    `json:"slot"`
	Gen     uint64 `json:"generation"`
	ID      uint64 `json:"id"`
	Name    string `json:"name"`
	Total   uint64 `json:"total"`
	Free    uint64 `json:"free"`
	MinFree uint64 `json:"min_free"`
	NoBufs  uint64 `json:"no_buffers"`
}

func decodePool(idx int, p []uint64) (PoolSnapshot, bool) {
	if p[pFlags]&flagInUse == 0 {
		return PoolSnapshot{}, false
	}
	ps := PoolSnapshot{Slot: idx, Gen: p[pGen], ID: p[pID], Name: loadString(p[pName:pNameEnd]),
		Total: p[pTotal], Free: p[pFree], NoBufs: p[pNoBufs]}
	if m := p[pMinFree]; m > 0 {
		ps.MinFree = m - 1
	}
	return ps, true
}

// IomuxSnapshot is a consistent copy of one iomux block.
type IomuxSnapshot struct {
	Slot         int       `json:"slot"`
	Gen          uint64    `json:"generation"`
	Kind         IomuxKind `json:"kind"`
	Epfd         int       `json:"epfd,omitempty"`
	Calls        uint64    `json:"calls"`
	PollHit      uint64    `json:"poll_hit"`
	PollMiss     uint64    `json:"poll_miss"`
	Timeouts     uint64    `json:"timeouts"`
	Errors       uint64    `json:"errors"`
	OSReady      uint64    `json:"os_ready"`
	OffloadReady uint64    `json:"offload_ready"`
	PollingCPU   uint64    `json:"polling_cpu_percent"`
}

func (m *IomuxSnapshot) counterFields() []*uint64 {
	return []*uint64{&m.Calls, &m.PollHit, &m.PollMiss, &m.Timeouts, &m.Errors, &m.OSReady, &m.OffloadReady}
}

// Delta returns m minus prev for the counters.
func (m IomuxSnapshot) Delta(prev IomuxSnapshot) IomuxSnapshot {
	d := m
	if prev.Gen != m.Gen {
		return d
	}
	cur, old, out := m.counterFields(), prev.counterFields(), d.counterFields()
	for i := range cur {
		if *cur[i] >= *old[i] {
			*out[i] = *cur[i] - *old[i]
		}
	}
	return d
}

// Name returns "select", "poll" or "epoll[FD]".
func (m IomuxSnapshot) Name() string {
	if m.Kind == IomuxEpoll {
		return "epoll[" + strconv.Itoa(m.Epfd) + "]"
	}
	return m.Kind.String()
}

// Active reports whether any counter is non-zero.
func (m IomuxSnapshot) Active() bool {
	for _, f := range m.counterFields() {
		if *f != 0 {
			return true
		}
	}
	return false
}

func decodeIomux(idx int, p []uint64) (IomuxSnapshot, bool) {
	flags := p[mFlags]
	if flags&flagInUse == 0 {
		return IomuxSnapshot{}, false
	}
	m := IomuxSnapshot{Slot: idx, Gen: p[mGen], Kind: IomuxKind(flags >> 8), PollingCPU: p[mPollingCPU]}
	if m.Kind == IomuxEpoll {
		m.Epfd = int(int32(p[mEpfd]))
	}
	f := m.counterFields()
	for i := range f {
		*f[i] = p[mCounters+i]
	}
	return m, true
}

// GlobalSnapshot is a copy of the process-wide block.
type GlobalSnapshot struct {
	SocketsOpened       uint64 `json:"sockets_opened"`
	SlotsExhausted      uint64 `json:"slots_exhausted"`
	RingsExhausted      uint64 `json:"rings_exhausted"`
	PoolsExhausted      uint64 `json:"pools_exhausted"`
	EpollsExhausted     uint64 `json:"epolls_exhausted"`
	GroupsExhausted     uint64 `json:"groups_exhausted"`
	FinalFileErrors     uint64 `json:"final_file_errors"`
	CommandsApplied     uint64 `json:"commands_applied"`
	Offloaded           uint64 `json:"offloaded"`
	Fallbacks           uint64 `json:"fallbacks"`
	Forks               uint64 `json:"forks"`
	TCPSegAllocFailures uint64 `json:"tcp_seg_alloc_failures"`
	KernelFromStart     uint64 `json:"kernel_from_start"`
	EarlyClosed         uint64 `json:"early_closed"`
	CrowdSleeps         uint64 `json:"crowd_sleeps"`
	SocketsCurrent      uint64 `json:"sockets_current"` // gauge
	SocketsMax          uint64 `json:"sockets_max"`     // gauge
}

func (g *GlobalSnapshot) counterFields() []*uint64 {
	return []*uint64{&g.SocketsOpened, &g.SlotsExhausted, &g.RingsExhausted, &g.PoolsExhausted,
		&g.EpollsExhausted, &g.GroupsExhausted, &g.FinalFileErrors, &g.CommandsApplied,
		&g.Offloaded, &g.Fallbacks, &g.Forks, &g.TCPSegAllocFailures, &g.KernelFromStart,
		&g.EarlyClosed, &g.CrowdSleeps}
}

// Delta returns g minus prev for the counters.
func (g GlobalSnapshot) Delta(prev GlobalSnapshot) GlobalSnapshot {
	d := g
	cur, old, out := g.counterFields(), prev.counterFields(), d.counterFields()
	for i := range cur {
		if *cur[i] >= *old[i] {
			*out[i] = *cur[i] - *old[i]
		}
	}
	return d
}

func decodeGlobal(p []uint64) GlobalSnapshot {
	var g GlobalSnapshot
	f := g.counterFields()
	for i := range f {
		*f[i] = p[i]
	}
	g.SocketsCurrent = p[gSocketsCurrent]
	g.SocketsMax = p[gSocketsMax]
	return g
}

// Snapshot is everything one read of a segment saw.
type Snapshot struct {
	Path      string           `json:"path"`
	Layout    uint32           `json:"layout"`
	Process   ProcessInfo      `json:"process"`
	Created   time.Time        `json:"created"`
	Taken     time.Time        `json:"taken"`
	Closed    bool             `json:"closed,omitempty"` // the process closed the segment (exiting)
	ZeroEpoch uint64           `json:"zero_epoch"`       // how many times a reader zeroed the counters
	MaxSocket int              `json:"max_sockets"`
	Sockets   []SocketSnapshot `json:"sockets"`
	Rings     []RingSnapshot   `json:"rings"`
	Pools     []PoolSnapshot   `json:"pools"`
	Iomux     []IomuxSnapshot  `json:"iomux"`
	Global    GlobalSnapshot   `json:"global"`
	Busy      int              `json:"busy_slots,omitempty"` // slots skipped: no consistent copy (writer died mid-update)
}
