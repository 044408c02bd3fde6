package shmtcp

import (
	"testing"

	ring "github.com/goxio/goxio/offload/shm"
)

// TestManyConnections opens and closes 1200 paired connections, 200 open at a time, each moving
// a few bytes both ways through the rings: no fd, mapping or file is left.
func TestManyConnections(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.RingBytes, p.MaxRingBytes = 4<<10, 4<<10 })
	l, port := listen(t)
	fds0 := fdCount(t)
	maps0 := mappingsOf(t, env.p.Dir)
	buf := cmem(t, 64)
	for round := 0; round < 6; round++ {
		var ends [][2]*TCP
		var fds [][2]int
		for i := 0; i < 200; i++ {
			cfd := dial(t, port)
			sfd := accept(t, l)
			c, s := env.NewTCP(func() bool { return false }), env.NewTCP(func() bool { return false })
			c.Established(cfd, false)
			s.Established(sfd, true)
			ends = append(ends, [2]*TCP{c, s})
			fds = append(fds, [2]int{cfd, sfd})
		}
		for i, p := range ends {
			for dir := 0; dir < 2; dir++ {
				for k := 0; k < 2; k++ { // the second exchange runs on the rings
					w, r := p[dir], p[1-dir]
					copy(buf, "ping")
					if n, errno := w.Transfer(call(opWrite, fds[i][dir], addr(buf), 4)); n != 4 || errno != 0 {
						t.Fatalf("conn %d write: %d %v", i, n, errno)
					}
					if n, errno := r.Transfer(call(opRead, fds[i][1-dir], addr(buf[8:]), 4)); n != 4 || errno != 0 || string(buf[8:12]) != "ping" {
						t.Fatalf("conn %d read: %d %v", i, n, errno)
					}
				}
			}
			if st := p[0].Stats(); !st.TxRing || !st.RxRing {
				t.Fatalf("conn %d not on the rings: %+v", i, st)
			}
		}
		if m := mappingsOf(t, env.p.Dir); m < 200 {
			t.Fatalf("only %d mappings with 200 connections open", m)
		}
		for i, p := range ends {
			p[0].Close(fds[i][0])
			unixClose(fds[i][0])
			p[1].Close(fds[i][1])
			unixClose(fds[i][1])
		}
	}
	if n := fdCount(t); n != fds0 {
		t.Fatalf("fds: %d before, %d after", fds0, n)
	}
	ring.DrainConnPool() // the segments kept for reuse go at exit
	if m := mappingsOf(t, env.p.Dir); m != maps0 {
		t.Fatalf("mappings of %s: %d before, %d after", env.p.Dir, maps0, m)
	}
	if c := env.Counts(); c.Opened != 2400 || c.Failed != 0 {
		t.Fatalf("counts %+v", c)
	}
}
