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
// senders). A receiver that stops polling sleeps in the kernel on its own socket; a sender that
// finds nobody polling sends one 16-byte wake datagram ("GOXIOWAK" and the inbox's secret token)
// to the receiver's kernel socket, from its own socket so connected receivers accept it. Receivers
// recognise and drop wake datagrams; select, poll and epoll see the kernel socket readable when
// ring data arrives for a sleeping receiver.
package shm
