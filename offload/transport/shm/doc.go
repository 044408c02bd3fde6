// Package shm is the shared-memory transport for UDP: datagrams between goxio processes of one
// user on one host and network namespace travel through user-space rings (package offload/shm)
// instead of the kernel; everything else keeps using the kernel socket, which every offloaded
// socket still is.
//
// A socket with a local port owns an inbox (its receiving rings) and publishes its binding in the
// discovery directory (package offload/discovery). A sender looks its destination up there; when
// the kernel would deliver to a goxio socket, the datagram goes into the sender process's ring of
// that inbox, with the source address the kernel would have reported. Otherwise it goes through
// the kernel.
//
// A receiver takes datagrams from its rings and from its kernel socket (remote and non-goxio
// senders). A receiver that stops polling sleeps in the kernel on its kernel socket and its
// doorbell (bell.go: an AF_UNIX datagram socket named after the inbox); a sender that finds
// nobody polling rings the doorbell (one empty datagram). select, poll and epoll wait on the
// doorbell too. While no sender has a ring to the socket, its plain receives read the kernel
// socket, and a blocking one sleeps on both, in the preload library (kread.go).
package shm
