package packet

import (
	"errors"
	"net/netip"
	"time"
)

// NeighCache remembers neighbour answers (IPv4 and IPv6) keyed by (ifindex, next hop), so that a sender asks the
// kernel once per next hop and age limit, not once per datagram. It has no goroutine and no timer:
// the caller passes its own monotonic clock to Lookup and calls Invalidate when it learns that
// neighbours or routes changed (a datagram it sent through the kernel, a route or link change, a
// periodic tick of its progress engine). Not safe for concurrent use.
type NeighCache struct {
	ttl           int64 // nanoseconds a Usable or Stale answer is kept
	unresolvedTTL int64 // nanoseconds an Unresolved answer is kept
	nudge         bool
	max           int
	gen           uint64
	entries       map[neighKey]neighEntry
	stats         NeighCacheStats
}

// NeighCacheStats counts what a NeighCache did.
type NeighCacheStats struct {
	// Hits counts lookups answered from the cache.
	Hits uint64
	// Queries counts lookups that asked the kernel (NeighGet).
	Queries uint64
	// Nudges counts NeighNudge calls the cache made; NudgeErrors those that failed (unix.EPERM
	// without CAP_NET_ADMIN: the caller's kernel sends then do the resolving).
	Nudges, NudgeErrors uint64
}

type neighKey struct {
	ifindex int
	ip      netip.Addr
}

type neighEntry struct {
	mac MAC
	res Resolution
	gen uint64
	at  int64
}

// maxNeighEntries bounds a cache; a full cache is emptied (next hops are few: gateways and
// on-link peers).
const maxNeighEntries = 4096

// NewNeighCache returns an empty cache that keeps Usable and Stale answers for ttl and Unresolved
// ones for unresolvedTTL (both at least 0). With nudge, each kernel answer that is Stale or
// Unresolved is followed by a NeighNudge, so the kernel revalidates or resolves the entry without
// the caller sending traffic through it.
func NewNeighCache(ttl, unresolvedTTL time.Duration, nudge bool) *NeighCache {
	return &NeighCache{
		ttl:           int64(max(ttl, 0)),
		unresolvedTTL: int64(max(unresolvedTTL, 0)),
		nudge:         nudge,
		max:           maxNeighEntries,
		entries:       make(map[neighKey]neighEntry),
	}
}

// Lookup returns the MAC of next hop hop on interface ifindex and what the caller may do with it
// (see Resolution; the MAC is zero when Unresolved). now is the caller's monotonic clock in
// nanoseconds. A cached answer younger than its age limit and not older than the last Invalidate
// is returned without a syscall (and without allocating); otherwise conn is asked, a missing
// entry counting as Unresolved. Errors are conn's (the answer is then not cached).
func (c *NeighCache) Lookup(conn *Conn, ifindex int, hop netip.Addr, now int64) (MAC, Resolution, error) {
	hop = hop.Unmap().WithZone("")
	k := neighKey{ifindex, hop}
	if e, ok := c.entries[k]; ok && e.gen == c.gen {
		limit := c.ttl
		if e.res == Unresolved {
			limit = c.unresolvedTTL
		}
		if now-e.at < limit && now >= e.at {
			c.stats.Hits++
			return e.mac, e.res, nil
		}
	}
	c.stats.Queries++
	e := neighEntry{gen: c.gen, at: now}
	n, err := conn.NeighGet(ifindex, hop)
	switch {
	case errors.Is(err, ErrNoNeighbour):
	case err != nil:
		return MAC{}, Unresolved, err
	default:
		e.res = n.Resolution()
		if e.res != Unresolved {
			e.mac = n.MAC
		}
	}
	if c.nudge && e.res != Usable {
		c.stats.Nudges++
		if conn.NeighNudge(ifindex, hop) != nil {
			c.stats.NudgeErrors++
		}
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[k] = e
	return e.mac, e.res, nil
}

// Invalidate drops every cached answer (by bumping the generation; memory is reused).
func (c *NeighCache) Invalidate() { c.gen++ }

// Forget drops the answer for one next hop, for example after a send through the kernel to it.
func (c *NeighCache) Forget(ifindex int, hop netip.Addr) {
	delete(c.entries, neighKey{ifindex, hop.Unmap().WithZone("")})
}

// Generation is the number of Invalidate calls so far.
func (c *NeighCache) Generation() uint64 { return c.gen }

// Stats returns the counters.
func (c *NeighCache) Stats() NeighCacheStats { return c.stats }
