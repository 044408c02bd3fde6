package offload

import "github.com/goxio/goxio/offload/internal/sysc"

// AdoptInternal moves one of the library's own fds high and marks it internal in table (the
// program cannot see or close it); the shared-memory transport's doorbells use it.
func AdoptInternal(table FDTable, fd int) int {
	fd = sysc.MoveHigh(fd)
	table.Set(fd, FlagInternal)
	return fd
}
