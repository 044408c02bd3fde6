package transporttest

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Cmsg lays out one control message as a program does in msg_control (the header, the data,
// padding to the next message): input for the tests of the UDP transports' control-data
// handling. x/sys builds only SCM_RIGHTS and SCM_CREDENTIALS messages.
func Cmsg(level, typ int, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(len(data))))
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.SizeofCmsghdr:], data)
	return b
}
