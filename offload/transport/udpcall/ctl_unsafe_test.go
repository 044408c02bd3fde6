package udpcall

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport/transporttest"
)

// cmsg builds one control message as a program lays it out.
var cmsg = transporttest.Cmsg

func intData(v int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(v)) }

// TestCtlDroppable checks which sendmsg control data a ring may leave out: only TTL, TOS, hop
// limit and traffic class with values the kernel accepts; everything else is the kernel's.
func TestCtlDroppable(t *testing.T) {
	join := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	ttl := cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(9))
	tos := cmsg(unix.IPPROTO_IP, unix.IP_TOS, intData(0xb8))
	for _, c := range []struct {
		name string
		ctl  []byte
		want bool
	}{
		{"IP_TTL 9", ttl, true},
		{"IP_TTL 9, exact length (no padding)", ttl[:unix.CmsgLen(4)], true},
		{"IP_TOS int", tos, true},
		{"IP_TOS byte", cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x10}), true},
		{"IP_TTL and IP_TOS", join(ttl, tos), true},
		{"IPV6_TCLASS -1", cmsg(unix.IPPROTO_IPV6, unix.IPV6_TCLASS, intData(-1)), true},
		{"IPV6_HOPLIMIT 255", cmsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, intData(255)), true},
		{"a trailing partial header is ignored", join(ttl, make([]byte, 8)), true},
		{"IP_TTL 0 (EINVAL)", cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(0)), false},
		{"IP_TTL 256 (EINVAL)", cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(256)), false},
		{"IP_TTL as a byte (EINVAL)", cmsg(unix.IPPROTO_IP, unix.IP_TTL, []byte{9}), false},
		{"IP_TOS 256 (EINVAL)", cmsg(unix.IPPROTO_IP, unix.IP_TOS, intData(256)), false},
		{"IPV6_HOPLIMIT -2 (EINVAL)", cmsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, intData(-2)), false},
		{"IP_PKTINFO", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, make([]byte, 12)), false},
		{"UDP_SEGMENT", cmsg(unix.IPPROTO_UDP, 103, []byte{0, 4}), false},
		{"SO_MARK", cmsg(unix.SOL_SOCKET, unix.SO_MARK, intData(1)), false},
		{"IP_TTL then IP_PKTINFO", join(ttl, cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, make([]byte, 12))), false},
		{"a length past the buffer", ttl[:unix.CmsgLen(4)-1], false},
		{"a length below the header", func() []byte {
			b := append([]byte(nil), ttl...)
			binary.NativeEndian.PutUint64(b, 8)
			return b
		}(), false},
		{"too much control data", join(ttl, ttl, ttl, ttl, ttl, ttl, ttl, ttl, ttl, ttl, ttl), false},
	} {
		tx := Tx{ctl: uintptr(unsafe.Pointer(&c.ctl[0])), ctlLen: uint64(len(c.ctl))}
		if got := tx.CtlDroppable(); got != c.want {
			t.Errorf("%s: droppable %v, want %v", c.name, got, c.want)
		}
		runtime.KeepAlive(c.ctl)
	}
	if (&Tx{ctlLen: 24}).CtlDroppable() {
		t.Error("a NULL control buffer with a length is droppable (the kernel answers EFAULT)")
	}
}

// FuzzCtlDroppable checks CtlDroppable against the kernel: control data it calls droppable must
// be control data the kernel's sendmsg accepts (a datagram to a loopback socket of the test's
// own), and it must never read past the buffer.
func FuzzCtlDroppable(f *testing.F) {
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(9)))
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x10}))
	f.Add(append(cmsg(unix.IPPROTO_IPV6, unix.IPV6_TCLASS, intData(-1)), cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(0))...))
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_TTL, intData(9))[:unix.CmsgLen(4)])
	r, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		f.Fatal(err)
	}
	defer unix.Close(r)
	lo := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(r, lo); err != nil {
		f.Fatal(err)
	}
	sa, _ := unix.Getsockname(r)
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		f.Fatal(err)
	}
	defer unix.Close(s)
	buf := make([]byte, 16)
	f.Fuzz(func(t *testing.T, ctl []byte) {
		if len(ctl) == 0 {
			return
		}
		// a copy of its own length: a read past it is a read past the program's buffer
		b := append(make([]byte, 0, len(ctl)), ctl...)
		tx := Tx{ctl: uintptr(unsafe.Pointer(&b[0])), ctlLen: uint64(len(b))}
		drop := tx.CtlDroppable()
		runtime.KeepAlive(b)
		if !drop {
			return
		}
		if _, err := unix.SendmsgN(s, []byte("ping"), b, sa, 0); err != nil && err != unix.EAGAIN {
			t.Fatalf("droppable control data %x: the kernel's sendmsg says %v", b, err)
		}
		for { // keep the receiver's queue short
			if _, _, err := unix.Recvfrom(r, buf, unix.MSG_DONTWAIT); err != nil {
				break
			}
		}
	})
}
