// Package shm carries datagrams between goxio processes of one user on one host through
// shared-memory rings: the receiving socket owns an Inbox, each sending process owns one Outlet
// (and one ring) per Inbox it sends to.
//
// # Files
//
// Every segment is a file in a directory (normally /dev/shm), created 0600 with O_CLOEXEC and
// O_EXCL, its space reserved with fallocate (a full file system gives ErrNoSpace at creation, not
// SIGBUS later), mapped shared, and its descriptor closed right after mmap.
//
//	<dir>/<name>              the inbox: header page, then a table of slots (inbox.go, layout.go)
//	<dir>/<name>.<pid>.<n>    one sender's ring: header page, then the data area (ring.go)
//
// A sender creates its ring file, then claims a free slot of the inbox by CAS on the slot's tag
// word (pid, claim sequence, ready bit), writes its start time and ring number n, sets the ready
// bit and bumps the inbox generation. The receiver's Refresh sees the generation change, derives
// the ring's file name from the slot's pid and n (never from a string in shared memory), checks
// the file (regular, owned by us, size matching the header) and maps it.
//
// # The ring
//
// A single-producer single-consumer byte ring. head (consumer) and tail (producer) are
// monotonically increasing byte positions on separate cache lines; the capacity is a power of
// two; records start on a cache line (64 bytes) and never wrap: when a record does not fit before
// the end of the data area, the producer first writes a padding record covering the rest. A
// record is
//
//	u64 word | name[28] | u32 zero | payload, padded to 64 bytes
//
// where the word packs the payload length, the name length, the kind and the record's position
// (layout.go). The producer writes name and payload, stores the word, then stores tail. The
// consumer polls the word at its head, not the tail: a record whose word carries the head's
// position is published, and the datagram's first bytes share its cache line, so a datagram
// costs the consumer the lines of its record only. It validates every field against its own
// private copy of the capacity and head (a producer may write anything, at any time), looks at
// the tail every 64 empty polls (a tail beyond a head with no published record there is a
// corrupt ring), and stores head after the caller copied the record out. A producer killed
// mid-write never stored the word, so the consumer never sees half a record and never waits
// for one.
//
// # Wake-ups
//
// The inbox header holds spinners (receiver threads polling) and wakePending. After publishing,
// a sender asks for a wake-up only when nobody spins and no wake-up is pending (wake.go); the
// caller then sends a wake datagram through the kernel. All of these are sequentially
// consistent atomics, which is what makes the protocol free of lost wake-ups.
//
// # Trust
//
// Shared memory is hostile input: a ring whose indices or records do not validate is detached
// (Inbox.CorruptRings counts it) and never returned as an error; slot contents are validated the
// same way. The package has no goroutines, timers, os.File or net: it runs on the caller's thread
// inside someone else's process.
package shm
