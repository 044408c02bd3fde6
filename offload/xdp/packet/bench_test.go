package packet

import (
	"fmt"
	"testing"
)

// Run: go test -run '^$' -bench . -benchmem ./offload/xdp/packet
func BenchmarkBuild(b *testing.B) {
	for _, size := range []int{64, 1400} {
		for _, iovs := range []int{1, 3} {
			for _, noCsum := range []bool{false, true} {
				name := fmt.Sprintf("payload=%d/iovecs=%d/udpcsum=%v", size, iovs, !noCsum)
				b.Run(name, func(b *testing.B) {
					h := Header{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, TTL: 64, NoChecksum: noCsum}
					payload := make([]byte, size)
					iov := make([][]byte, iovs)
					for i := range iov {
						iov[i] = payload[i*size/iovs : (i+1)*size/iovs]
					}
					buf := make([]byte, 2048)
					b.SetBytes(int64(size))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := Build(buf, &h, iov, size, 1500); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, size := range []int{64, 1400} {
		for _, verify := range []Verify{VerifyNone, VerifyAll} {
			b.Run(fmt.Sprintf("payload=%d/verify=%v", size, verify), func(b *testing.B) {
				h := Header{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, TTL: 64}
				buf := make([]byte, 2048)
				n, err := Build(buf, &h, [][]byte{make([]byte, size)}, size, 1500)
				if err != nil {
					b.Fatal(err)
				}
				var out Header
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Parse(buf[:n], &out, verify); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
