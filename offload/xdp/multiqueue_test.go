package xdp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// TestMultiQueue uses a veth with 4 queues: datagrams from 16 sender sockets spread
// over the queues and each arrives on the AF_XDP socket of its queue, exactly once;
// with only queue 0 registered, the other queues' datagrams reach the kernel.
func TestMultiQueue(t *testing.T) {
	const queues = 4
	tp := newTopo(t, queues)
	p, socks := attachOpen(t, tp, Options{}, Config{RxFrames: 256, TxFrames: 16}, 0, 1, 2, 3)
	if p.Queues() != queues {
		t.Fatalf("program has %d queues, want %d", p.Queues(), queues)
	}
	dst := netip.AddrPortFrom(tp.addrA, 7100)
	if err := p.AddFlow(dst); err != nil {
		t.Fatal(err)
	}
	kernel := udpSocket(t, tp.nsA, dst)
	var senders []int
	for i := range 16 {
		senders = append(senders, udpSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, uint16(6100+i))))
	}
	const per = 20
	send := func() {
		for i, fd := range senders {
			for j := range per {
				var b [4]byte
				binary.BigEndian.PutUint16(b[0:], uint16(i))
				binary.BigEndian.PutUint16(b[2:], uint16(j))
				sendUDP(t, fd, dst, b[:])
			}
		}
	}
	total := len(senders) * per
	seen := make(map[uint32]bool)
	check := func(f []byte) {
		pl := udpPayload(f)
		if len(pl) != 4 {
			t.Errorf("payload %x", pl)
			return
		}
		k := binary.BigEndian.Uint32(pl)
		if seen[k] {
			t.Errorf("datagram %08x received twice", k)
		}
		seen[k] = true
	}
	send()
	counts := collect(t, socks, total, 5*time.Second, check)
	sum, used := 0, 0
	for _, c := range counts {
		sum += c
		if c > 0 {
			used++
		}
	}
	t.Logf("per-queue counts %v", counts)
	if sum != total || len(seen) != total {
		t.Fatalf("received %d (%d distinct) of %d datagrams: %v", sum, len(seen), total, counts)
	}
	if used < 2 {
		t.Errorf("all datagrams arrived on one queue (%v): the multi-queue path is not exercised", counts)
	}
	for i, s := range socks {
		if st := mustStats(t, s); st.RxPackets != uint64(counts[i]) {
			t.Errorf("queue %d: stats say %d packets, received %d", i, st.RxPackets, counts[i])
		}
		checkAccounting(t, s)
	}
	if got := recvUDP(kernel, 1, 100*time.Millisecond); len(got) != 0 {
		t.Errorf("kernel socket received %d steered datagrams", len(got))
	}

	// Only queue 0 keeps a socket: the others fall back to the kernel.
	for q := 1; q < queues; q++ {
		if err := p.Unregister(q); err != nil {
			t.Fatal(err)
		}
	}
	clear(seen)
	send()
	xsk := collect(t, socks[:1], counts[0], 5*time.Second, check)
	kern := recvUDP(kernel, total-counts[0], 5*time.Second)
	if xsk[0] != counts[0] || len(kern) != total-counts[0] {
		t.Errorf("queue 0 only: AF_XDP got %d (want %d), kernel %d (want %d)", xsk[0], counts[0], len(kern), total-counts[0])
	}
}
