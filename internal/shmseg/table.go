package shmseg

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrHeader is returned by OpenTable for a file whose first words are not the header asked for
// (another layout, or not a table).
var ErrHeader = errors.New("not a table of this layout")

// OpenTable maps the shared table at path (in dir) of size bytes whose first words are header
// (its magic first), creating it complete if there is none: built and linked into place with
// CreateLinked, its header words written last to first, so an opener never sees a half-made
// one. Tables live for good and are shared by the user's processes (the TCP pairing table, the
// held-wait table).
func OpenTable(dir, path string, size int, header []uint64) ([]uint64, error) {
	for range 4 {
		b, err := Open(path, size, size)
		if err == nil {
			mem := Words(b)
			for i, w := range header {
				if atomic.LoadUint64(&mem[i]) != w {
					_ = Unmap(b)
					return nil, fmt.Errorf("open table %s: %w", path, ErrHeader)
				}
			}
			return mem, nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return nil, err
		}
		err = CreateLinked(dir, path, size, true, func(b []byte) {
			m := Words(b)
			for i := len(header) - 1; i >= 0; i-- {
				atomic.StoreUint64(&m[i], header[i])
			}
		})
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("open table %s: created and removed repeatedly", path)
}
