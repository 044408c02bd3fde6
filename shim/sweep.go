package main

import (
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/discovery"
	ring "github.com/goxio/goxio/offload/shm"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	"github.com/goxio/goxio/stats"
)

// sweepLeftovers removes the files processes that are gone left behind, whatever way they
// ended (a process that calls _exit or is killed never runs the library's exit path): their
// statistics segments (VMA_STATS_SHMEM_DIR) and shared-memory inboxes and rings
// (GOXIO_SHM_DIR), whether or not this process uses them. Every engine runs it when it starts,
// before creating its own. Cost: a read of each directory and a kill(2) per name of ours, plus
// a header read per live statistics segment (to tell a reused pid apart); when files of other
// network namespaces are there, a look at the network namespace of each process of the user.
func sweepLeftovers(p conf.Params) {
	if n := stats.Sweep(p.StatsShmemDir); n > 0 {
		lib.log.Debug("removed statistics segments of processes that are gone", zap.Int("files", n))
	}
	if n := shmtr.SweepStale(p.SHMDir); n > 0 {
		lib.log.Debug("removed shared-memory segments of processes that are gone", zap.Int("files", n))
	}
	// The discovery directory's entries of processes that are gone: their listeners above all,
	// which connecting processes trust without asking whether the owner lives.
	if ns, err := discovery.NetNS(); err == nil {
		if n, err := discovery.SweepDir(p.SHMDir, unix.Geteuid(), ns); err != nil {
			lib.log.Debug("discovery directory not swept", zap.Error(err))
		} else if n > 0 {
			lib.log.Debug("removed discovery entries of processes that are gone", zap.Int("entries", n))
		}
		// The directories and pairing tables of network namespaces the user's processes left.
		if n, err := discovery.SweepNamespaces(p.SHMDir, unix.Geteuid(), ns, discovery.FileName, ring.PairsFileName); err != nil {
			lib.log.Debug("other network namespaces' files not swept", zap.Error(err))
		} else if n > 0 {
			lib.log.Debug("removed the files of network namespaces no process of ours is in", zap.Int("files", n))
		}
	}
}
