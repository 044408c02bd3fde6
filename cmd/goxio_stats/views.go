package main

import (
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/goxio/goxio/stats"
)

// Text views, laid out like vma_stats so that eyes and scripts used to it
// find the same columns: sizes in kilobytes (1024, truncated), a cycle
// separator, headers repeated every screenful. goxio adds the transport
// (and the reason when it is the kernel) at the end of each socket's Rx line
// and a Transport column in the netstat view.

const (
	screenLines     = 24
	cycleSeparator  = "-------------------------------------------------------------------------------"
	upperShort      = " %-7s %42s %31s\n"
	lowerShort      = " %-7s %10s %7s %8s %7s %6s %7s %7s %7s %7s %s\n"
	rxShort         = " %-3d %-3s %10d %7d %8d %7d %6.1f %7d %7d %7d %7d %s\n"
	txShort         = " %-3s %-3s %10d %7d %8d %7d %-6s %7d %7d %7d %7d\n"
	upperMedium     = " %-7s %65s %31s\n"
	middleMedium    = " %-7s %10s %7s %8s %7s %6s%23s %7s %7s %7s %7s %s\n"
	lowerMedium     = " %50s %6s  %6s  %6s \n"
	rxMedium        = " %-3d %-3s %10d %7d %8d %7d %6.1f %6d  %6d  %6d %7d %7d %7d %7d %s\n"
	txMedium        = " %-3s %-3s %10d %7d %8d %7d %29s %7d %7d %7d %7d\n"
	iomuxLine       = "%-8s%-2s %-9s%d%-1s%d %-12s %-9s%-5d %-7s%-4d %-5s%-2.2f%-3s %-5s%d%-1s\n"
	netstatHeader   = "Proto Offloaded Transport  Recv-Q Send-Q Local Address            Foreign Address          State       Inode      PID/Program name\n"
	netstatRow      = "%-5s %-9s %-10s %-6d %-6d %-24s %-24s %-11s %-10d %d/%s\n"
	groupsHeader    = "goxio Group Memberships Information\nGroup                fd number\n------------------------------\n"
	kilo            = 1024
	headerLinesSkip = 2
)

// textPrinter prints text views and remembers how many lines it printed
// since the last header.
type textPrinter struct {
	o       *options
	w       io.Writer
	lines   int
	netstat bool // header printed
	err     error
}

func newTextPrinter(o *options, w io.Writer) *textPrinter {
	return &textPrinter{o: o, w: w, lines: screenLines}
}

func (p *textPrinter) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
	p.lines += strings.Count(format, "\n")
}

// suffix is "/s" in delta mode.
func (p *textPrinter) suffix() string {
	if p.o.details == detailsDeltas {
		return "/s"
	}
	return ""
}

// transportLabel is the transport, with the reason when on the kernel.
func transportLabel(s stats.SocketSnapshot) string {
	if s.Transport == stats.TransportOS && s.Reason != stats.ReasonNone {
		return "os(" + s.Reason.String() + ")"
	}
	return s.Transport.String()
}

func (p *textPrinter) print(views []procView) {
	switch p.o.view {
	case viewNetstat:
		p.printNetstat(views)
		return
	case viewGroups:
		for _, v := range views {
			p.printGroups(v.snap)
		}
		return
	}
	for _, v := range views {
		snap := v.snap
		switch p.o.view {
		case viewBasic, viewMedium:
			p.printTable(snap)
		case viewFull:
			p.printFull(snap)
		}
		if len(snap.Sockets) > 0 || p.o.view == viewFull {
			p.printf("%s\n", cycleSeparator)
		}
	}
}

func (p *textPrinter) headers() {
	totals := p.o.details == detailsTotals
	if p.o.view == viewBasic {
		if totals {
			p.printf(upperShort, "fd", "------------ total offloaded -------------", "--------- total os ----------")
			p.printf(lowerShort, " ", "pkt", "Kbyte", "eagain", "error", "poll%", "pkt", "Kbyte", "eagain", "error", "transport")
		} else {
			p.printf(upperShort, "fd", "--------------- offloaded ----------------", "---------- os ---------")
			p.printf(lowerShort, " ", "pkt/s", "Kbyte/s", "eagain/s", "error/s", "poll%", "pkt/s", "Kbyte/s", "eagain/s", "error/s", "transport")
		}
		return
	}
	if totals {
		p.printf(upperMedium, "fd", "----------------------- total offloaded -------------------------", "--------- total os ----------")
		p.printf(middleMedium, " ", "pkt", "Kbyte", "eagain", "error", "poll%", "---- queue pkt -----", "pkt", "Kbyte", "eagain", "error", "transport")
		p.printf(lowerMedium, " ", "cur", "max", "drop")
	} else {
		p.printf(upperMedium, "fd", "---------------------------- offloaded --------------------------", "---------- os ---------")
		p.printf(middleMedium, " ", "pkt/s", "Kbyte/s", "eagain/s", "error/s", "poll%", "----- queue pkt ------", "pkt/s", "Kbyte/s", "eagain/s", "error/s", "transport")
		p.printf(lowerMedium, " ", "cur", "max", "drop/s")
	}
}

// printTable prints views 1 and 2: two lines per socket, then (view 2) one
// line per active iomux block.
func (p *textPrinter) printTable(snap *stats.Snapshot) {
	if p.lines >= screenLines {
		p.lines = 0
		p.headers()
	}
	for _, s := range snap.Sockets {
		c := s.Counters
		poll := stats.PollPercent(c.PollHit, c.PollMiss)
		if p.o.view == viewBasic {
			p.printf(rxShort, s.FD, "Rx:", c.RxPackets, c.RxBytes/kilo, c.RxEAGAIN, c.RxErrors, poll,
				c.RxOSPackets, c.RxOSBytes/kilo, c.RxOSEAGAIN, c.RxOSErrors, transportLabel(s))
			p.printf(txShort, " ", "Tx:", c.TxPackets, c.TxBytes/kilo, c.TxEAGAIN, c.TxErrors, " ",
				c.TxOSPackets, c.TxOSBytes/kilo, c.TxOSEAGAIN, c.TxOSErrors)
			continue
		}
		p.printf(rxMedium, s.FD, "Rx:", c.RxPackets, c.RxBytes/kilo, c.RxEAGAIN, c.RxErrors, poll,
			c.RxQueuePackets, c.RxQueuePktsMax, c.RxDropPackets,
			c.RxOSPackets, c.RxOSBytes/kilo, c.RxOSEAGAIN, c.RxOSErrors, transportLabel(s))
		p.printf(txMedium, " ", "Tx:", c.TxPackets, c.TxBytes/kilo, c.TxEAGAIN, c.TxErrors, " ",
			c.TxOSPackets, c.TxOSBytes/kilo, c.TxOSEAGAIN, c.TxOSErrors)
	}
	if p.o.view == viewMedium {
		for _, m := range snap.Iomux {
			if !m.Active() {
				continue
			}
			p.printf(iomuxLine, m.Name(), p.suffix(), "Rx Ready:", m.OSReady, "/", m.OffloadReady,
				"[os/offload]", "Timeouts:", m.Timeouts, "Errors:", m.Errors,
				"Poll:", stats.PollPercent(m.PollHit, m.PollMiss), "%", "Polling CPU:", m.PollingCPU, "%")
		}
	}
}

// printFull prints view 3: every socket, iomux block, ring, pool and the
// global block.
func (p *textPrinter) printFull(snap *stats.Snapshot) {
	sfx := p.suffix()
	for _, s := range snap.Sockets {
		p.printf("%s", stats.FormatSocket(s, sfx))
	}
	for _, m := range snap.Iomux {
		if !m.Active() {
			continue
		}
		p.printf("%s\n\t%s\n", stats.Separator, m.Name())
		p.printf("Polling CPU%s: %d%%\n", sfx, m.PollingCPU)
		p.printf("Calls%s: %d\n", sfx, m.Calls)
		if m.OSReady|m.OffloadReady != 0 {
			p.printf("Rx fds ready: %d / %d [os/offload]%s\n", m.OSReady, m.OffloadReady, sfx)
		}
		if m.PollHit|m.PollMiss != 0 {
			p.printf("Polls [miss/hit]%s: %d / %d (%2.2f%%)\n", sfx, m.PollMiss, m.PollHit,
				stats.PollPercent(m.PollHit, m.PollMiss))
		}
		if m.Timeouts != 0 {
			p.printf("Timeouts%s: %d\n", sfx, m.Timeouts)
		}
		if m.Errors != 0 {
			p.printf("Errors%s: %d\n", sfx, m.Errors)
		}
	}
	for _, r := range snap.Rings {
		p.printf("%s\n\tRING_%s=[%d] %s\n", stats.Separator, strings.ToUpper(r.Transport.String()), r.Slot, r.Name)
		p.printf("%-20s %d / %d [kilobytes/packets]%s\n", "Tx Offload:", r.TxBytes/kilo, r.TxPackets, sfx)
		p.printf("%-20s %d / %d [kilobytes/packets]%s\n", "Rx Offload:", r.RxBytes/kilo, r.RxPackets, sfx)
		if r.RxDrops|r.TxDrops != 0 {
			p.printf("%-20s %d / %d [rx/tx]%s\n", "Drops:", r.RxDrops, r.TxDrops, sfx)
		}
		if r.WakeRequest|r.WakeSent != 0 {
			p.printf("%-20s %d / %d [requests/sent]%s\n", "Wakeups:", r.WakeRequest, r.WakeSent, sfx)
		}
		p.printf("%-20s %d / %d [rx/tx packets]\n", "Queue:", r.RxQueue, r.TxQueue)
		if r.Retransmits != 0 {
			p.printf("%-20s %d %s\n", "Retransmissions:", r.Retransmits, sfx)
		}
		if r.Transport == stats.TransportXDP {
			p.printf("%-20s %d / %d / %d [dropped/ring full/fill ring empty]%s\n", "XDP kernel rx:",
				r.XDPRxDropped, r.XDPRxRingFull, r.XDPFillRingEmpty, sfx)
			p.printf("%-20s %d / %d / %d [rx invalid/tx invalid/tx ring empty]%s\n", "XDP kernel desc:",
				r.XDPRxInvalidDescs, r.XDPTxInvalidDescs, r.XDPTxRingEmpty, sfx)
		}
	}
	for _, pl := range snap.Pools {
		p.printf("%s\n\tBUFFER_POOL(%s)=[%d]\n", stats.Separator, pl.Name, pl.Slot)
		p.printf("%-20s %d\n", "Size:", pl.Total)
		p.printf("%-20s %d (min %d)\n", "Free:", pl.Free, pl.MinFree)
		p.printf("%-20s %d%s\n", "No buffers error:", pl.NoBufs, sfx)
	}
	g := snap.Global
	p.printf("%s\n\tGLOBAL_STATS\n", stats.Separator)
	p.printf("%-28s %d (max %d, slots %d)\n", "Sockets open:", g.SocketsCurrent, g.SocketsMax, snap.MaxSocket)
	p.printf("%-28s %d%s\n", "Sockets opened:", g.SocketsOpened, sfx)
	p.printf("%-28s %d / %d%s\n", "Offloaded / kernel fallback:", g.Offloaded, g.Fallbacks, sfx)
	if g.KernelFromStart != 0 {
		// sockets that never had a slot: a connect or first send to a destination without goxio
		p.printf("%-28s %d%s\n", "Kernel, engine never used:", g.KernelFromStart, sfx)
	}
	if g.EarlyClosed != 0 {
		// TCP connections between goxio processes that ended before they had a reason to pair
		p.printf("%-28s %d%s\n", "TCP closed before pairing:", g.EarlyClosed, sfx)
	}
	if g.CrowdSleeps != 0 {
		// spinning waits ended (to sleep unless data came) because more threads were runnable than CPUs
		p.printf("%-28s %d%s\n", "Spins ended, CPUs crowded:", g.CrowdSleeps, sfx)
	}
	for _, l := range []struct {
		name string
		v    uint64
	}{
		{"Stats slots exhausted:", g.SlotsExhausted}, {"Rings exhausted:", g.RingsExhausted},
		{"Pools exhausted:", g.PoolsExhausted}, {"Epoll slots exhausted:", g.EpollsExhausted},
		{"Group table full:", g.GroupsExhausted}, {"Stats file errors:", g.FinalFileErrors},
		{"Commands applied:", g.CommandsApplied}, {"Forks:", g.Forks},
		{"TCP seg alloc failures:", g.TCPSegAllocFailures},
	} {
		if l.v != 0 {
			p.printf("%-28s %d%s\n", l.name, l.v, sfx)
		}
	}
	if snap.Busy != 0 {
		p.printf("%-28s %d\n", "Busy slots (skipped):", snap.Busy)
	}
	p.printf("%s\n", stats.Separator)
}

// printGroups prints view 4: each multicast group and the fds in it.
func (p *textPrinter) printGroups(snap *stats.Snapshot) {
	var order []netip.Addr
	fds := make(map[netip.Addr][]int)
	for _, s := range snap.Sockets {
		for _, g := range s.Groups {
			if _, ok := fds[g]; !ok {
				order = append(order, g)
			}
			fds[g] = append(fds[g], s.FD)
		}
	}
	if len(order) > 0 {
		p.printf("\n%s", groupsHeader)
		for _, g := range order {
			var b strings.Builder
			for _, fd := range fds[g] {
				fmt.Fprintf(&b, "%d ", fd)
			}
			p.printf("%-22s%s\n", "["+g.String()+"]", b.String())
		}
	}
	p.printf("%s\n", cycleSeparator)
}

// printNetstat prints view 5: every socket of every process, one line each.
func (p *textPrinter) printNetstat(views []procView) {
	if !p.netstat {
		p.printf("%s", netstatHeader)
		p.netstat = true
	}
	for _, v := range views {
		for _, s := range v.snap.Sockets {
			offloaded := "No"
			if s.Transport.Offloaded() {
				offloaded = "Yes"
			}
			local := "*:*"
			if s.Local.IsValid() {
				local = s.Local.String()
			}
			foreign := "0.0.0.0:*"
			if s.Family == 10 {
				foreign = "[::]:*"
			}
			if s.Peer.IsValid() {
				foreign = s.Peer.String()
			}
			state := ""
			if s.Type == 1 {
				state = s.State.String()
			}
			p.printf(netstatRow, s.Proto(), offloaded, transportShort(s), s.Counters.RxQueueBytes,
				s.Counters.TxQueueBytes, local, foreign, state, s.Inode, v.pid, v.name)
		}
	}
}

// transportShort is the netstat column: the transport, or the kernel
// reason's first word.
func transportShort(s stats.SocketSnapshot) string {
	if s.Transport == stats.TransportOS && s.Reason != stats.ReasonNone {
		r, _, _ := strings.Cut(s.Reason.String(), " ")
		return "os:" + r
	}
	return s.Transport.String()
}
