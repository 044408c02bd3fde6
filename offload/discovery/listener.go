package discovery

import "net/netip"

// Listening TCP sockets. A goxio process publishes each TCP socket it offloads to shared memory
// when the socket listens (an Entry with Stream set, Local its bound address); a connecting goxio
// process asks LookupListener whether the address it connected to is such a listener before it
// pays for a connection segment. A connection to anything else (a program without goxio, a
// listener whose rule is os, another network namespace) never pairs, so it never needs one.
//
// The answer may be wrong only one way that matters: a listener published but gone (its process
// died and the entry was not swept yet, or a program without goxio took the port since) answers
// true, and the connection then pays for a segment the peer never attaches to, as before this
// check existed. A listener not yet published (between its listen(2) and the publication, a few
// instructions of the same call) answers false and the connection stays on the kernel: correct,
// only slower. Owners are not checked for life here (that costs a /proc read per connection).

// LookupListener reports whether a listening TCP socket of a goxio process of this namespace is
// bound to dst: its address, or the wildcard, and its port. IPv4-mapped addresses stand for
// IPv4. Memory reads only.
func (d *Dir) LookupListener(dst netip.AddrPort) bool {
	if d == nil || d.closed.Load() || dst.Port() == 0 {
		return false
	}
	daddr := dst.Addr().WithZone("").Unmap()
	if !daddr.IsValid() {
		return false
	}
	found := false
	d.scan(filter{port: dst.Port(), stream: true}, func(_ int, w *[entryWords]uint64) bool {
		r, ok := decode(w)
		if !ok || !r.Stream {
			return true
		}
		exact, wild := localMatch(&r.Entry, daddr)
		found = exact || wild
		return !found
	})
	return found
}

// ListenerEntry is the entry a listening TCP socket bound to local (family AF_INET or AF_INET6)
// publishes; label names it in the table (an inbox-like name: letters, digits, '.', '_', '-').
func ListenerEntry(family int, local netip.AddrPort, label string) Entry {
	return Entry{Family: family, Local: local, Inbox: label, Stream: true}
}

// TakeOverListener is Publish for the engine that has just adopted a listening socket its
// process made before the engine loaded: when the preload library published the socket already
// (an entry with Lazy set, of this process's pid and start time, with e's family, bound address
// and V6Only), that entry becomes e in place (same slot, same claim number), so that a connecting
// process never finds the listener missing nor finds it twice; the preload library then leaves
// it alone (it withdraws only entries still lazy). false when there is no such entry: Publish.
func (d *Dir) TakeOverListener(e Entry) (Handle, bool) {
	if d == nil || d.closed.Load() {
		return Handle{}, false
	}
	e, err := normalize(e)
	if err != nil || !e.Stream || e.Lazy {
		return Handle{}, false
	}
	pid, start, err := d.self()
	if err != nil {
		return Handle{}, false
	}
	var h Handle
	found := false
	d.scan(filter{port: e.Local.Port(), stream: true}, func(slot int, w *[entryWords]uint64) bool {
		r, ok := decode(w)
		if !ok || !r.Lazy || r.PID != pid || r.start != start || r.Family != e.Family || r.Local != e.Local ||
			r.V6Only != e.V6Only {
			return true
		}
		s := d.slot(slot)
		held, ok := tryLock(s, w[eLock], pid)
		if !ok {
			return true // changed since the copy (withdrawn meanwhile): look on
		}
		var nw [entryWords]uint64
		encode(&nw, e, pid, start, r.claim)
		writeEntry(s, &nw)
		unlock(s, held)
		d.bumpGen()
		h, found = Handle{d: d, slot: slot, claim: r.claim}, true
		return false
	})
	return h, found
}

// Listeners returns every listening TCP socket published in the directory (PID filled), for
// tools and tests; entries of dead processes not swept yet included.
func (d *Dir) Listeners() []Entry {
	if d == nil || d.closed.Load() {
		return nil
	}
	var out []Entry
	var w [entryWords]uint64
	budget := scanBudget
	for i, hi := 0, d.high(); i < hi; i++ {
		if readEntry(d.slot(i), &w, &budget) != readOK {
			continue
		}
		if r, ok := decode(&w); ok && r.Stream {
			out = append(out, r.Entry)
		}
	}
	return out
}
