package shm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goxio/goxio/internal/shmseg"
)

// Segment files are internal/shmseg's: created exclusively, 0600, O_CLOEXEC, no symlink
// following; space reserved with fallocate; mapped shared; the descriptor closed right after
// mmap.

// validName reports whether name can be a segment name in a directory: not empty, no slash, not
// a dot name, at most 63 bytes (the discovery table's limit).
func validName(name string) bool {
	return name != "" && len(name) <= 63 && name != "." && name != ".." &&
		!strings.ContainsAny(name, "/\x00")
}

// ringName is the file name of ring n of process pid sending to inbox.
func ringName(inbox string, pid int, n uint64) string {
	return inbox + "." + strconv.Itoa(pid) + "." + strconv.FormatUint(n, 10)
}

// createSegment creates path with size bytes reserved and maps it shared, read-write
// (internal/shmseg). EEXIST is returned unwrapped inside the error so callers can retry another
// name; a full file system gives ErrNoSpace.
func createSegment(path string, size int) ([]byte, error) { return shmseg.Create(path, size) }

// openSegment opens an existing segment written by another process and maps it shared,
// read-write, after checking that it is a regular file owned by our effective uid, not
// accessible by others, whose size is within [minSize, maxSize] (else ErrCorrupt). It returns
// the mapping (of the whole file).
func openSegment(path string, minSize, maxSize int) ([]byte, error) {
	mem, err := shmseg.Open(path, minSize, maxSize)
	if errors.Is(err, shmseg.ErrNotPrivate) || errors.Is(err, shmseg.ErrSize) {
		return nil, fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	return mem, err
}
