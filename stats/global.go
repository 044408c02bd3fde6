package stats

import "sync/atomic"

// Global is the process-wide block. Methods do nothing on a nil *Global.
type Global struct {
	p *[globalWords]uint64
}

// Word returns the address of global counter c's word, for a writer outside Go (the preload
// library) that adds to it atomically; nil on a nil *Global.
func (g *Global) Word(c GlobalCounter) *uint64 {
	if g == nil || c >= numGlobalCounters {
		return nil
	}
	return &g.p[int(c)]
}

// Add adds n to global counter c.
func (g *Global) Add(c GlobalCounter, n uint64) {
	if g == nil || c >= numGlobalCounters {
		return
	}
	atomic.AddUint64(&g.p[int(c)], n)
}
