package xdp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// linkMessage builds an RTM_NEWLINK answer with a name, queue counts and an IFLA_XDP
// attribute.
func linkMessage(seq uint32, index int32, name string, mode byte, progID uint32) []byte {
	ne := binary.NativeEndian
	b := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	ne.PutUint16(b[4:], unix.RTM_NEWLINK)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[unix.NLMSG_HDRLEN+4:], uint32(index))
	b = appendAttr(b, unix.IFLA_IFNAME, append([]byte(name), 0))
	b = appendAttr(b, unix.IFLA_NUM_RX_QUEUES, ne.AppendUint32(nil, 4))
	b = appendAttr(b, unix.IFLA_NUM_TX_QUEUES, ne.AppendUint32(nil, 2))
	var x []byte
	x = appendAttr(x, unix.IFLA_XDP_ATTACHED, []byte{mode})
	x = appendAttr(x, unix.IFLA_XDP_PROG_ID, ne.AppendUint32(nil, progID))
	b = appendAttr(b, unix.IFLA_XDP|0x8000, x)
	ne.PutUint32(b[0:], uint32(len(b)))
	return b
}

func TestParseLinkAnswer(t *testing.T) {
	l, done, err := parseLinkAnswer(linkMessage(1, 7, "eth9", xdpAttachedSKB, 42), 1)
	if !done || err != nil || l.Index != 7 || l.Name != "eth9" || l.RxQueues != 4 || l.TxQueues != 2 || l.XDPMode != ModeGeneric || l.XDPProgID != 42 {
		t.Errorf("parse = %+v, %v, %v", l, done, err)
	}
	if _, done, _ := parseLinkAnswer(linkMessage(2, 7, "eth9", 0, 0), 1); done {
		t.Errorf("an answer to another request was taken")
	}
	bad := linkMessage(1, 7, "eth9", 1, 1)
	binary.NativeEndian.PutUint32(bad[0:], uint32(len(bad)+1))
	if _, done, err := parseLinkAnswer(bad, 1); !done || err == nil {
		t.Errorf("a message longer than the buffer was accepted")
	}
}

// FuzzParseLinkAnswer checks that no answer makes the parser panic or read outside it.
func FuzzParseLinkAnswer(f *testing.F) {
	f.Add(linkMessage(1, 3, "veth0", xdpAttachedDrv, 9))
	f.Add(linkMessage(1, 3, "", xdpAttachedMulti, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseLinkAnswer(b, 1)
	})
}
