package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/goxio/goxio/stats"
)

// Prometheus text exposition format (version 0.0.4): one HELP and TYPE line
// per metric family, then its samples. Every sample carries the process's
// pid and program; socket samples add fd, proto and transport.

type sample struct {
	labels string
	value  uint64
}

type family struct {
	name, help, typ string
	samples         []sample
}

// registry keeps families in first-use order.
type registry struct {
	order []string
	fams  map[string]*family
}

func (r *registry) add(name, typ, help, labels string, v uint64) {
	f, ok := r.fams[name]
	if !ok {
		f = &family{name: name, help: help, typ: typ}
		r.fams[name] = f
		r.order = append(r.order, name)
	}
	f.samples = append(f.samples, sample{labels, v})
}

// escapeLabel escapes a label value.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// labels formats name/value pairs.
func labels(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, kv[i], escapeLabel(kv[i+1]))
	}
	return b.String()
}

// prometheusText renders the processes' snapshots (totals, whatever -d says:
// Prometheus computes rates itself).
func prometheusText(views []procView) string {
	r := &registry{fams: make(map[string]*family)}
	for _, v := range views {
		addProcess(r, v)
	}
	var b strings.Builder
	for _, name := range r.order {
		f := r.fams[name]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, s := range f.samples {
			fmt.Fprintf(&b, "%s{%s} %d\n", f.name, s.labels, s.value)
		}
	}
	return b.String()
}

func addProcess(r *registry, v procView) {
	snap := v.snap
	pid := strconv.Itoa(v.pid)
	proc := []string{"pid", pid, "program", v.name}
	pl := func(extra ...string) string { return labels(append(append([]string{}, proc...), extra...)...) }

	r.add("goxio_process_info", "gauge", "A process running under goxio (value 1).",
		pl("version", snap.Process.Version, "app_id", snap.Process.AppID), 1)
	for _, s := range snap.Sockets {
		c := s.Counters
		sl := func(extra ...string) string {
			return pl(append([]string{"fd", strconv.Itoa(s.FD), "proto", s.Proto(), "transport", s.Transport.String()}, extra...)...)
		}
		r.add("goxio_socket_info", "gauge", "A socket (value 1) with its addresses and why it is on the kernel.",
			sl("reason", s.Reason.String(), "local", addrLabel(s.Local), "peer", addrLabel(s.Peer), "state", s.State.String()), 1)
		for _, d := range []struct {
			dir, path                 string
			pkts, bytes, eagain, errs uint64
		}{
			{"rx", "offload", c.RxPackets, c.RxBytes, c.RxEAGAIN, c.RxErrors},
			{"rx", "os", c.RxOSPackets, c.RxOSBytes, c.RxOSEAGAIN, c.RxOSErrors},
			{"tx", "offload", c.TxPackets, c.TxBytes, c.TxEAGAIN, c.TxErrors},
			{"tx", "os", c.TxOSPackets, c.TxOSBytes, c.TxOSEAGAIN, c.TxOSErrors},
		} {
			l := sl("direction", d.dir, "path", d.path)
			r.add("goxio_socket_packets_total", "counter", "Successful receive/send calls (per message).", l, d.pkts)
			r.add("goxio_socket_bytes_total", "counter", "Bytes received/sent.", l, d.bytes)
			r.add("goxio_socket_eagain_total", "counter", "Calls that returned EAGAIN.", l, d.eagain)
			r.add("goxio_socket_errors_total", "counter", "Calls that failed with another errno.", l, d.errs)
		}
		r.add("goxio_socket_drops_total", "counter", "Packets dropped (rx: queue full; tx: after send).",
			sl("direction", "rx"), c.RxDropPackets)
		r.add("goxio_socket_drops_total", "counter", "", sl("direction", "tx"), c.TxDrops)
		r.add("goxio_socket_polls_total", "counter", "Blocking receives that found data while polling (hit) or slept (miss).",
			sl("result", "hit"), c.PollHit)
		r.add("goxio_socket_polls_total", "counter", "", sl("result", "miss"), c.PollMiss)
		r.add("goxio_socket_retransmits_total", "counter", "TCP segments retransmitted.", sl(), c.Retransmits)
		r.add("goxio_socket_rx_queue_packets", "gauge", "Packets waiting in the receive queue.", sl(), c.RxQueuePackets)
		r.add("goxio_socket_rx_queue_bytes", "gauge", "Bytes waiting in the receive queue.", sl(), c.RxQueueBytes)
		r.add("goxio_socket_rx_queue_packets_max", "gauge", "Most packets seen in the receive queue.", sl(), c.RxQueuePktsMax)
		r.add("goxio_socket_tx_queue_bytes", "gauge", "Bytes sent but not yet taken by the peer.", sl(), c.TxQueueBytes)
		r.add("goxio_socket_rx_zcopy_total", "counter", "Datagrams handed over in place (VMA's recvfrom_zcopy).", sl(), c.RxZcopy)
		r.add("goxio_socket_rx_held", "gauge", "Datagrams handed over in place and not yet freed.", sl(), c.RxHeld)
		for _, g := range s.Groups {
			r.add("goxio_socket_multicast_member", "gauge", "Multicast group joined by a socket (value 1).", sl("group", g.String()), 1)
		}
	}
	for _, m := range snap.Iomux {
		l := pl("call", m.Kind.String(), "epfd", strconv.Itoa(m.Epfd))
		r.add("goxio_iomux_calls_total", "counter", "select/poll/epoll_wait calls.", l, m.Calls)
		r.add("goxio_iomux_polls_total", "counter", "Calls that found ready fds while polling (hit) or slept (miss).",
			pl("call", m.Kind.String(), "epfd", strconv.Itoa(m.Epfd), "result", "hit"), m.PollHit)
		r.add("goxio_iomux_polls_total", "counter", "", pl("call", m.Kind.String(), "epfd", strconv.Itoa(m.Epfd), "result", "miss"), m.PollMiss)
		r.add("goxio_iomux_timeouts_total", "counter", "Calls that returned 0.", l, m.Timeouts)
		r.add("goxio_iomux_errors_total", "counter", "Calls that returned -1.", l, m.Errors)
		r.add("goxio_iomux_ready_fds_total", "counter", "Ready fds returned, kernel (os) or offloaded.",
			pl("call", m.Kind.String(), "epfd", strconv.Itoa(m.Epfd), "path", "os"), m.OSReady)
		r.add("goxio_iomux_ready_fds_total", "counter", "", pl("call", m.Kind.String(), "epfd", strconv.Itoa(m.Epfd), "path", "offload"), m.OffloadReady)
	}
	for _, rg := range snap.Rings {
		l := func(dir string) string {
			return pl("ring", strconv.Itoa(rg.Slot), "name", rg.Name, "transport", rg.Transport.String(), "direction", dir)
		}
		r.add("goxio_ring_packets_total", "counter", "Packets through a ring.", l("rx"), rg.RxPackets)
		r.add("goxio_ring_packets_total", "counter", "", l("tx"), rg.TxPackets)
		r.add("goxio_ring_bytes_total", "counter", "Bytes through a ring.", l("rx"), rg.RxBytes)
		r.add("goxio_ring_bytes_total", "counter", "", l("tx"), rg.TxBytes)
		r.add("goxio_ring_drops_total", "counter", "Packets dropped at a ring.", l("rx"), rg.RxDrops)
		r.add("goxio_ring_drops_total", "counter", "", l("tx"), rg.TxDrops)
		r.add("goxio_ring_wakeups_total", "counter", "Doorbell requests by sleepers (rx) and wake calls by producers (tx).", l("rx"), rg.WakeRequest)
		r.add("goxio_ring_wakeups_total", "counter", "", l("tx"), rg.WakeSent)
		if rg.Transport != stats.TransportXDP {
			continue
		}
		x := func(what string) string {
			return pl("ring", strconv.Itoa(rg.Slot), "name", rg.Name, "counter", what)
		}
		const help = "The kernel's statistics of an AF_XDP socket (XDP_STATISTICS)."
		r.add("goxio_ring_xdp_kernel_total", "counter", help, x("rx_dropped"), rg.XDPRxDropped)
		r.add("goxio_ring_xdp_kernel_total", "counter", "", x("rx_invalid_descs"), rg.XDPRxInvalidDescs)
		r.add("goxio_ring_xdp_kernel_total", "counter", "", x("tx_invalid_descs"), rg.XDPTxInvalidDescs)
		r.add("goxio_ring_xdp_kernel_total", "counter", "", x("rx_ring_full"), rg.XDPRxRingFull)
		r.add("goxio_ring_xdp_kernel_total", "counter", "", x("rx_fill_ring_empty_descs"), rg.XDPFillRingEmpty)
		r.add("goxio_ring_xdp_kernel_total", "counter", "", x("tx_ring_empty_descs"), rg.XDPTxRingEmpty)
	}
	for _, p := range snap.Pools {
		l := pl("pool", p.Name)
		r.add("goxio_pool_buffers", "gauge", "Buffers owned by a pool.", l, p.Total)
		r.add("goxio_pool_free_buffers", "gauge", "Free buffers in a pool.", l, p.Free)
		r.add("goxio_pool_no_buffers_total", "counter", "Allocations that failed: pool empty.", l, p.NoBufs)
	}
	g := snap.Global
	r.add("goxio_sockets_open", "gauge", "Sockets with a stats slot now.", pl(), g.SocketsCurrent)
	r.add("goxio_sockets_open_max", "gauge", "Most sockets open at once.", pl(), g.SocketsMax)
	r.add("goxio_sockets_opened_total", "counter", "Sockets given a stats slot.", pl(), g.SocketsOpened)
	r.add("goxio_sockets_offloaded_total", "counter", "Moves of a socket to a fast path.", pl(), g.Offloaded)
	r.add("goxio_sockets_fallbacks_total", "counter", "Sockets put on the kernel for a reason.", pl(), g.Fallbacks)
	r.add("goxio_stats_slots_exhausted_total", "counter", "Sockets without a stats slot (raise VMA_STATS_FD_NUM).", pl(), g.SlotsExhausted)
}

func addrLabel(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}
