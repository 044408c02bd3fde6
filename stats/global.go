package stats

import "sync/atomic"

// Global is the process-wide block. Methods do nothing on a nil *Global.
type Global struct {
	p *[globalWords]uint64
}

// Add adds n to global counter c.
func (g *Global) Add(c GlobalCounter, n uint64) {
	if g == nil || c >= numGlobalCounters {
		return
	}
	atomic.AddUint64(&g.p[int(c)], n)
}
