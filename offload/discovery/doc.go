// Package discovery is where goxio processes of one user and one network
// namespace find each other's offloaded UDP sockets: a shared directory
// segment `<dir>/goxio.<uid>.<netns>.dir` (normally in /dev/shm) holding a
// fixed table of entries, one per offloaded UDP binding and one per
// multicast membership, each naming the receiving socket's inbox.
//
// Flow: a process Opens the segment (created on first use, race-free), a
// socket Publishes its binding after bind (and Updates it after connect or an
// option change, with the local address getsockname reports, as the kernel
// rehashes a connected socket to its source address), publishes one more
// entry per multicast membership, and Withdraws them on close. A sender calls
// Lookup on every miss of its own cache, which it keys by Gen (read before
// the Lookup); Lookup answers with the sockets the kernel would deliver the
// datagram to.
//
// Ownership: each entry is written only by the process that published it,
// under a per-entry seqlock; readers copy entries without writing. The one
// exception is a dead owner (its pid is gone or runs with another start
// time): any process may free its entries (Sweep, Lookup for the entries it
// would have returned, Publish on a full table), taking the entry's lock by
// compare-and-swap so that two sweepers never overlap. An entry left
// half-written by a writer that died is skipped by readers after a bounded
// number of tries and freed by Sweep.
//
// The segment is hostile input: every entry is validated as a whole before
// use (an inbox name is a plain file name), every loop is bounded, and a
// corrupt entry is skipped, never returned. The package runs inside the host
// program: raw system calls only, no goroutines, no timers, no file
// descriptor kept after Open.
package discovery
