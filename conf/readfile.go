package conf

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
)

// maxConfigFile bounds what readConfigFile reads: rule and parameter files are small.
const maxConfigFile = 16 << 20

// readConfigFile reads a regular file with raw system calls. Not os.Open/os.ReadFile: inside the
// library an os.File would start the Go runtime's network poller, whose epoll fd and eventfd would
// then appear in the program's fd table. Errors are *fs.PathError like os.Open's.
func readConfigFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errNotRegular
	}
	var data []byte
	buf := make([]byte, 64<<10)
	for len(data) <= maxConfigFile {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return data, nil
		}
		data = append(data, buf[:n]...)
	}
	return nil, &fs.PathError{Op: "read", Path: path, Err: errTooLarge}
}
