// Package shmseg makes, maps and sweeps the library's shared-memory segments: the statistics
// segment (stats), the discovery table (offload/discovery), and the rings and inboxes of the
// shared-memory transports (offload/shm). A segment is a file (in /dev/shm or the statistics
// directory) created exclusively, mode 0600, never through a symbolic link, with its space
// reserved up front (a full file system is an error at creation, never a SIGBUS at the first
// store), mapped shared and read-write; the descriptor is closed right after the mapping.
//
// Everything here uses raw system calls (golang.org/x/sys/unix): package os inside the
// program's process would start the Go runtime's netpoller.
package shmseg
