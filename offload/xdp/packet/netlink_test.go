package packet

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// nlmsg builds one netlink message as the kernel would send it.
func nlmsg(typ, flags uint16, seq, pid uint32, body []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(body)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, seq)
	b = binary.NativeEndian.AppendUint32(b, pid)
	b = append(b, body...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func errBody(errno int32, quoted []byte, attrs []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(-errno))
	return append(append(b, quoted...), attrs...)
}

func TestWalk(t *testing.T) {
	c := &Conn{seq: 7, pid: 42}
	var got []string
	fn := func(b []byte) error { got = append(got, string(b)); return nil }
	ack := nlmsg(unix.NLMSG_ERROR, 0, 7, 42, errBody(0, make([]byte, 16), nil))

	// Answers to other requests or ports are skipped; ours are passed on; the ack ends it.
	var ferr error
	buf := append(nlmsg(unix.RTM_NEWROUTE, 0, 6, 42, []byte("old!")), nlmsg(unix.RTM_NEWROUTE, 0, 7, 41, []byte("port"))...)
	buf = append(buf, nlmsg(unix.RTM_NEWROUTE, 0, 7, 42, []byte("mine"))...)
	buf = append(buf, ack...)
	done, err := c.walk(buf, unix.RTM_NEWROUTE, fn, &ferr)
	if !done || err != nil || ferr != nil || len(got) != 1 || got[0] != "mine" {
		t.Fatalf("walk = %v, %v, %v, %q", done, err, ferr, got)
	}

	// A kernel error comes back as its errno, with the extended-ack text.
	msg := []byte("Invalid thing\x00")
	attr := binary.NativeEndian.AppendUint16(nil, uint16(4+len(msg)))
	attr = binary.NativeEndian.AppendUint16(attr, unix.NLMSGERR_ATTR_MSG)
	attr = append(attr, msg...)
	quoted := nlmsg(unix.RTM_GETROUTE, 0, 7, 42, nil)
	e := nlmsg(unix.NLMSG_ERROR, nlmFCapped|nlmFAckTLVs, 7, 42, errBody(int32(unix.EINVAL), quoted, attr))
	_, err = c.walk(e, unix.RTM_NEWROUTE, fn, &ferr)
	if !errors.Is(err, unix.EINVAL) || err.Error() != "Invalid thing: invalid argument" {
		t.Fatalf("error message: %v", err)
	}

	// Unexpected answer types and lying lengths are ErrNetlink.
	ferr = nil
	if done, err := c.walk(append(nlmsg(unix.RTM_NEWLINK, 0, 7, 42, nil), ack...), unix.RTM_NEWROUTE, fn, &ferr); !done || err != nil || !errors.Is(ferr, ErrNetlink) {
		t.Fatalf("wrong type: %v %v %v", done, err, ferr)
	}
	bad := nlmsg(unix.RTM_NEWROUTE, 0, 7, 42, []byte("abcd"))
	binary.NativeEndian.PutUint32(bad, 200)
	if _, err := c.walk(bad, unix.RTM_NEWROUTE, fn, &ferr); !errors.Is(err, ErrNetlink) {
		t.Fatalf("lying length: %v", err)
	}
	if _, err := c.walk(nlmsg(unix.NLMSG_ERROR, 0, 7, 42, []byte{1}), unix.RTM_NEWROUTE, fn, &ferr); !errors.Is(err, ErrNetlink) {
		t.Fatalf("short error: %v", err)
	}
}

func TestForAttrs(t *testing.T) {
	var b []byte
	b = binary.NativeEndian.AppendUint16(b, 5)
	b = binary.NativeEndian.AppendUint16(b, 3|0x8000) // nested bit dropped
	b = append(b, 'x', 0, 0, 0)
	b = binary.NativeEndian.AppendUint16(b, 8)
	b = binary.NativeEndian.AppendUint16(b, 4)
	b = binary.NativeEndian.AppendUint32(b, 1400)
	var types []uint16
	if err := forAttrs(b, func(typ uint16, val []byte) { types = append(types, typ) }); err != nil || len(types) != 2 || types[0] != 3 || types[1] != 4 {
		t.Fatalf("forAttrs = %v, %v", types, err)
	}
	binary.NativeEndian.PutUint16(b[8:], 9) // runs past the end
	if err := forAttrs(b, func(uint16, []byte) {}); !errors.Is(err, ErrNetlink) {
		t.Fatalf("attribute past the end: %v", err)
	}
	if err := forAttrs([]byte{2, 0, 1, 0}, func(uint16, []byte) {}); !errors.Is(err, ErrNetlink) {
		t.Fatalf("attribute length 2: %v", err)
	}
	if _, err := attrU32([]byte{1, 2}); !errors.Is(err, ErrNetlink) {
		t.Fatalf("short u32: %v", err)
	}
	if _, err := attrIPv4([]byte{1, 2, 3, 4, 5}); !errors.Is(err, ErrNetlink) {
		t.Fatalf("5-byte address: %v", err)
	}
}

func TestClosedConn(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.LinkByIndex(1); !errors.Is(err, unix.EBADF) {
		t.Fatalf("LinkByIndex after Close: %v, want EBADF", err)
	}
}
