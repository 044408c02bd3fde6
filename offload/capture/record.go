package capture

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
)

// A record in the trace ring: RecordHeader bytes, then the captured bytes of the frame, padded
// to 8 bytes. Records never wrap: a producer that finds less room than a record before the end
// of the ring writes a padding record there (or nothing, with less than RecordHeader bytes left)
// and goes on at the start.
//
//	0  u32 record length (header, data and padding; a multiple of 8)
//	4  u32 captured length
//	8  u32 original length (the frame as it would be on the wire)
//	12 u16 flags (Rec*)
//	14 u8  transport
//	15 u8  direction
//	16 i64 timestamp, Unix nanoseconds
//	24 i32 fd
//	28 u32 the peer process's pid (0: unknown)
const RecordHeader = 32

// Record flags.
const (
	RecPad     = 1 << 0 // padding up to the end of the ring
	RecMatch   = 1 << 1 // the packet matched the filter
	RecTrigger = 1 << 2 // the packet matched the trigger
	RecStop    = 1 << 3 // the packet matched the stop condition
)

// Record is one captured packet as the tool reads it.
type Record struct {
	CapLen, OrigLen int
	Flags           uint16
	Transport, Dir  uint8
	Time            int64 // Unix nanoseconds
	FD              int
	Peer            int    // the pid at the other end of a ring; 0: unknown
	Data            []byte // the captured bytes, a copy
}

// ErrCorrupt says the ring holds something that is no record: the reader stops there.
var ErrCorrupt = errors.New("capture: corrupt trace ring")

// ring is the producer side of a trace ring, used under the session's mutex.
type ring struct {
	tail, head *uint64 // in the header
	buf        []byte
	size       uint64
	pos        uint64 // our copy of the tail
}

// reserve returns n bytes (a multiple of 8, at least RecordHeader) for a record, or nil when the
// ring has no room (the record is dropped). Publish commits it.
func (r *ring) reserve(n uint64) []byte {
	head := atomic.LoadUint64(r.head)
	used := r.pos - head
	if used > r.size {
		return nil // a consumer that moved head beyond tail: corrupt, record nothing
	}
	off := r.pos & (r.size - 1)
	if end := r.size - off; end < n {
		if used+end+n > r.size {
			return nil
		}
		if end >= RecordHeader {
			clear(r.buf[off : off+RecordHeader])
			binary.NativeEndian.PutUint32(r.buf[off:], uint32(end))
			binary.NativeEndian.PutUint16(r.buf[off+12:], RecPad)
		}
		r.pos += end
		off = 0
	} else if used+n > r.size {
		return nil
	}
	return r.buf[off : off+n]
}

// publish makes the record reserve returned (n bytes) visible to the reader.
func (r *ring) publish(n uint64) {
	r.pos += n
	atomic.StoreUint64(r.tail, r.pos)
}

// putHeader fills a record's header.
func putHeader(b []byte, reclen, caplen, origlen int, flags uint16, transport, dir uint8, ts int64, fd, peer int) {
	binary.NativeEndian.PutUint32(b, uint32(reclen))
	binary.NativeEndian.PutUint32(b[4:], uint32(caplen))
	binary.NativeEndian.PutUint32(b[8:], uint32(origlen))
	binary.NativeEndian.PutUint16(b[12:], flags)
	b[14], b[15] = transport, dir
	binary.NativeEndian.PutUint64(b[16:], uint64(ts))
	binary.NativeEndian.PutUint32(b[24:], uint32(int32(fd)))
	binary.NativeEndian.PutUint32(b[28:], uint32(peer))
}

// Reader drains one trace ring (the consumer side, in the tool).
type Reader struct {
	tail, head *uint64
	buf        []byte
	size       uint64
}

// NewReader reads the ring of a segment's memory (mapped by the tool); hdr is the header's words.
func NewReader(hdr []uint64, ringBuf []byte) *Reader {
	return &Reader{tail: &hdr[HTail], head: &hdr[HHead], buf: ringBuf, size: uint64(len(ringBuf))}
}

// Drain calls f with every record written since the last call, in order, and frees their
// space. It stops at the first malformed record with ErrCorrupt.
func (r *Reader) Drain(f func(*Record)) error {
	head := atomic.LoadUint64(r.head)
	tail := atomic.LoadUint64(r.tail)
	if tail-head > r.size {
		return ErrCorrupt
	}
	defer func() { atomic.StoreUint64(r.head, head) }()
	for head != tail {
		off := head & (r.size - 1)
		end := r.size - off
		if end < RecordHeader {
			head += end
			continue
		}
		b := r.buf[off:]
		reclen := uint64(binary.NativeEndian.Uint32(b))
		flags := binary.NativeEndian.Uint16(b[12:])
		if reclen < 8 || reclen%8 != 0 || reclen > end || reclen > tail-head {
			return ErrCorrupt
		}
		if flags&RecPad != 0 {
			head += reclen
			continue
		}
		caplen := int(binary.NativeEndian.Uint32(b[4:]))
		if reclen < RecordHeader || caplen > int(reclen)-RecordHeader {
			return ErrCorrupt
		}
		rec := &Record{
			CapLen:    caplen,
			OrigLen:   int(binary.NativeEndian.Uint32(b[8:])),
			Flags:     flags,
			Transport: b[14],
			Dir:       b[15],
			Time:      int64(binary.NativeEndian.Uint64(b[16:])),
			FD:        int(int32(binary.NativeEndian.Uint32(b[24:]))),
			Peer:      int(binary.NativeEndian.Uint32(b[28:])),
			Data:      append([]byte(nil), b[RecordHeader:RecordHeader+caplen]...),
		}
		head += reclen
		f(rec)
	}
	return nil
}
