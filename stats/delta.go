package stats

import "math"

// Per-second deltas between two snapshots of the same segment (goxio_stats
// -d 2). A slot is matched by index and generation: a socket opened between
// the snapshots is compared with zero.

// Rates returns a copy of cur whose counters are per-second rates since
// prev (gauges and metadata are cur's). secs <= 0 uses the snapshots' times.
func Rates(cur, prev *Snapshot, secs float64) *Snapshot {
	if secs <= 0 {
		secs = cur.Taken.Sub(prev.Taken).Seconds()
	}
	if secs <= 0 {
		secs = 1
	}
	out := *cur
	type key struct {
		slot int
		gen  uint64
	}
	prevSock := make(map[key]SocketCounters, len(prev.Sockets))
	for _, s := range prev.Sockets {
		prevSock[key{s.Slot, s.Gen}] = s.Counters
	}
	out.Sockets = make([]SocketSnapshot, len(cur.Sockets))
	for i, s := range cur.Sockets {
		s.Counters = s.Counters.Delta(prevSock[key{s.Slot, s.Gen}])
		scale(s.Counters.counterFields(), secs)
		out.Sockets[i] = s
	}
	prevRing := make(map[int]RingSnapshot, len(prev.Rings))
	for _, r := range prev.Rings {
		prevRing[r.Slot] = r
	}
	out.Rings = make([]RingSnapshot, len(cur.Rings))
	for i, r := range cur.Rings {
		p, ok := prevRing[r.Slot]
		if ok && p.Gen == r.Gen {
			r = r.Delta(p)
		}
		scale(r.counterFields(), secs)
		out.Rings[i] = r
	}
	prevMux := make(map[int]IomuxSnapshot, len(prev.Iomux))
	for _, m := range prev.Iomux {
		prevMux[m.Slot] = m
	}
	out.Iomux = make([]IomuxSnapshot, len(cur.Iomux))
	for i, m := range cur.Iomux {
		if p, ok := prevMux[m.Slot]; ok {
			m = m.Delta(p)
		}
		scale(m.counterFields(), secs)
		out.Iomux[i] = m
	}
	prevPool := make(map[int]PoolSnapshot, len(prev.Pools))
	for _, p := range prev.Pools {
		prevPool[p.Slot] = p
	}
	out.Pools = make([]PoolSnapshot, len(cur.Pools))
	for i, p := range cur.Pools {
		if q, ok := prevPool[p.Slot]; ok && q.Gen == p.Gen && p.NoBufs >= q.NoBufs {
			p.NoBufs -= q.NoBufs
		}
		f := []*uint64{&p.NoBufs}
		scale(f, secs)
		out.Pools[i] = p
	}
	out.Global = cur.Global.Delta(prev.Global)
	scale(out.Global.counterFields(), secs)
	return &out
}

func scale(fields []*uint64, secs float64) {
	for _, f := range fields {
		*f = uint64(math.Round(float64(*f) / secs))
	}
}
