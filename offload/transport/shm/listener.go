package shm

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/discovery"
)

// Listening TCP sockets in the discovery directory (discovery/listener.go): the shared-memory
// TCP transport pairs a connection only when both ends are goxio processes, and a connecting end
// learns that its peer is one from the directory, before it pays for a connection segment.

// PublishListener publishes a listening TCP socket of this process of the family (AF_INET, or
// AF_INET6 with IPV6_V6ONLY as v6only: a dual-stack listener is found by IPv4 connections too)
// bound to local; withdraw the handle when the socket closes. An error when the directory is
// full or closed: connections to the socket then stay on the kernel. A socket the preload
// library published before the engine loaded (shim/preload/lazy_listen.c) keeps its entry, now
// the engine's (discovery.Dir.TakeOverListener).
func (e *Env) PublishListener(family int, v6only bool, local netip.AddrPort) (discovery.Handle, error) {
	label := fmt.Sprintf("goxio.%d.tcp.%d", unix.Geteuid(), e.pid)
	entry := discovery.ListenerEntry(family, local, label)
	entry.V6Only = v6only
	if h, ok := e.dir.TakeOverListener(entry); ok {
		return h, nil
	}
	h, err := e.dir.Publish(entry)
	if err != nil {
		return discovery.Handle{}, fmt.Errorf("publish listener %v: %w", local, err)
	}
	return h, nil
}

// GoxioListener reports whether remote is a listening TCP socket a goxio process of this
// namespace published (memory reads only).
func (e *Env) GoxioListener(remote netip.AddrPort) bool {
	gen := e.dir.Gen()
	found := e.dir.LookupListener(remote)
	if e.p.ListenerSeen != nil {
		e.p.ListenerSeen(remote, gen, found)
	}
	return found
}
