// Package stats is goxio's shared-memory statistics segment: one versioned
// layout, the writer the library publishes into and the reader goxio_stats
// (and tests) read from.
//
// # The segment
//
// Each process running under goxio owns one file, <dir>/goxiostat.<pid>
// (dir is VMA_STATS_SHMEM_DIR, /tmp by default), created 0600 and mapped
// shared. The file is an array of little-endian 64-bit words and every word
// is read and written with an atomic load, store, add or swap, so a reader in
// another process never sees a torn word. The layout, in words:
//
//	header   64 words: magic, layout version, sizes and offsets of every area,
//	         pid and start time, zero epoch, command counters (layout.go)
//	info     process information: command line, application id, library
//	         version, parameters (info.go)
//	sockets  maxSockets slots of 64 words (512 bytes) each (socket.go)
//	rings    16 slots of 32 words (ring.go)
//	pools    16 slots of 16 words (pool.go)
//	iomux    2+64 slots of 16 words: select, poll, one per epoll fd (iomux.go)
//	global   32 words of process-wide counters (global.go)
//	mcast    512 entries of 4 words: the multicast groups joined (multicast.go)
//	commands 8 slots of 8 words: commands from the reader (command.go)
//
// With the default 100 sockets the file is about 100 KiB; with 65536 sockets
// it is 32 MiB.
//
// # Consistency
//
// Counters are plain atomic adds into the mapped slot: no lock, no syscall,
// no allocation. Slot identity and metadata (open, close, addresses,
// transport, state, multicast membership) change under a per-slot seqlock:
// the writer makes the sequence word odd, changes the words, and makes it
// even again; the reader copies the slot between two reads of the sequence
// word and retries when they differ or are odd. Opening a slot zeroes its
// counters inside the seqlock and bumps its generation, so the reader never
// shows a half-written slot, or one socket's metadata with another's
// counters.
//
// # Commands and zeroing
//
// The reader posts commands (log level, log details, dump fd state) into the
// command area and wakes a shared futex; the library's command thread sleeps
// in Writer.CommandWait, runs them through Writer.PollCommands and
// acknowledges each. Zeroing needs no help from the
// process: the reader atomically swaps every counter with zero, which cannot
// lose or double an increment that races with it.
//
// # Lifetime
//
// Writer.Close unlinks the file at exit. A segment whose process is gone
// (pid and start time from /proc/PID/stat no longer match, or the process
// no longer maps the file because it exec'd) is stale; goxio_stats removes
// stale segments (RemoveStale) unless told not to.
package stats
