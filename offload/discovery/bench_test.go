package discovery

import (
	"fmt"
	"testing"
)

// BenchmarkLookup measures a cache-miss lookup in a table of 3000 bindings
// (one per port) plus a reuseport group and a multicast group on the target
// port.
func BenchmarkLookup(b *testing.B) {
	for _, mc := range []bool{false, true} {
		b.Run(fmt.Sprintf("multicast=%v", mc), func(b *testing.B) {
			d, err := Open(b.TempDir(), 0, testNetNS)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for i := 0; i < 3000; i++ {
				if _, err := d.Publish(v4(fmt.Sprintf("s%d", i), fmt.Sprintf("127.0.0.1:%d", 20000+i))); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 4; i++ {
				e := v4(fmt.Sprintf("rp%d", i), "0.0.0.0:9000")
				e.ReusePort = true
				d.Publish(e)
				e.Inbox = fmt.Sprintf("mc%d", i)
				e.Group = ad("239.1.1.1")
				d.Publish(e)
			}
			dst := ap("127.0.0.1:9000")
			if mc {
				dst = ap("239.1.1.1:9000")
			}
			src := ap("127.0.0.1:5555")
			var buf []Entry
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf = d.Lookup(dst, src, buf)
			}
			if len(buf) == 0 {
				b.Fatal("nothing found")
			}
		})
	}
}
