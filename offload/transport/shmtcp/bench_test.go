package shmtcp

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// benchPair is a connected pair for benchmarks: both ends on the transport (env != nil,
// switched by one exchange) or plain kernel sockets.
func benchPair(b *testing.B, env *Env) (c, s *end) {
	c, s = pair(b, env, env)
	if env != nil {
		for i := 0; i < 2; i++ {
			c.sendAll([]byte("x"))
			s.recvAll(1)
			s.sendAll([]byte("y"))
			c.recvAll(1)
		}
	}
	return c, s
}

// pingPong measures one 64-byte round trip (the figure is the round trip, ns/op).
func pingPong(b *testing.B, env *Env) {
	c, s := benchPair(b, env)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, errno := s.do(transport.OpRecvfrom, addr(s.rbuf), 64, unix.MSG_WAITALL, 0, 0)
			if errno != 0 || n != 64 {
				return
			}
			if n, errno := s.do(transport.OpSendto, addr(s.rbuf), 64, unix.MSG_NOSIGNAL, 0, 0); errno != 0 || n != 64 {
				return
			}
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, errno := c.do(transport.OpSendto, addr(c.wbuf), 64, unix.MSG_NOSIGNAL, 0, 0); errno != 0 || n != 64 {
			b.Fatalf("send %d %v", n, errno)
		}
		if n, errno := c.do(transport.OpRecvfrom, addr(c.rbuf), 64, unix.MSG_WAITALL, 0, 0); errno != 0 || n != 64 {
			b.Fatalf("recv %d %v", n, errno)
		}
	}
	b.StopTimer()
	c.close()
	<-done
}

func BenchmarkPingPong64(b *testing.B) {
	b.Run("kernel", func(b *testing.B) { pingPong(b, nil) })
	b.Run("ring-sleep", func(b *testing.B) { pingPong(b, testEnv(b, nil)) })
	b.Run("ring-spin", func(b *testing.B) {
		pingPong(b, testEnv(b, func(p *Params) { p.RxPoll = 100000 }))
	})
}

// bulk measures one-way throughput in 64 KiB sends.
func bulk(b *testing.B, env *Env) {
	c, s := benchPair(b, env)
	const chunk = 64 << 10
	b.SetBytes(chunk)
	done := make(chan struct{})
	total := int64(b.N) * chunk
	go func() {
		defer close(done)
		for got := int64(0); got < total; {
			n, errno := s.do(transport.OpRead, addr(s.rbuf), uintptr(len(s.rbuf)))
			if errno != 0 || n == 0 {
				return
			}
			got += int64(n)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < chunk; {
			n, errno := c.do(transport.OpWrite, addr(c.wbuf[off:]), uintptr(chunk-off))
			if errno != 0 {
				b.Fatalf("write: %v", errno)
			}
			off += n
		}
	}
	<-done
	b.StopTimer()
}

func BenchmarkBulk(b *testing.B) {
	b.Run("kernel", func(b *testing.B) { bulk(b, nil) })
	b.Run("ring", func(b *testing.B) { bulk(b, testEnv(b, nil)) })
	b.Run("ring-1MiB", func(b *testing.B) {
		bulk(b, testEnv(b, func(p *Params) { p.RingBytes = 1 << 20 }))
	})
}
