package discovery

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConcurrentPublish: goroutines publishing at the same time get
// distinct slots; every entry is found; concurrent withdrawals empty the
// table.
func TestConcurrentPublish(t *testing.T) {
	d, dir := openTest(t)
	d2, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	const workers, each = 8, 200
	hs := make([][]Handle, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			dd := d
			if w%2 == 1 {
				dd = d2 // the other mapping, as another process
			}
			for i := 0; i < each; i++ {
				h, err := dd.Publish(v4(fmt.Sprintf("w%d.%d", w, i), fmt.Sprintf("127.0.0.1:%d", 20000+w*each+i)))
				if err != nil {
					t.Error(err)
					return
				}
				hs[w] = append(hs[w], h)
			}
		}(w)
	}
	wg.Wait()
	for w := 0; w < workers; w++ {
		for i := 0; i < each; i++ {
			want := fmt.Sprintf("w%d.%d", w, i)
			if got := lookupOne(t, d, fmt.Sprintf("127.0.0.1:%d", 20000+w*each+i), "127.0.0.1:1"); got != want {
				t.Fatalf("port %d: %q, want %q", 20000+w*each+i, got, want)
			}
		}
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for _, h := range hs[w] {
				h.Withdraw()
			}
		}(w)
	}
	wg.Wait()
	var buf [entryWords]uint64
	for i := 0; i < d.high(); i++ {
		if r := readEntry(d.slot(i), &buf, nil); r != readFree {
			t.Fatalf("slot %d not free after withdrawing everything: %v", i, r)
		}
	}
}

// TestConcurrentLookup: owners publish, update (connect and disconnect) and
// withdraw while other goroutines, through another mapping, look up and
// sweep. A reader must never see a torn entry: the inbox name encodes the
// port and whether the socket is connected, and must agree with the fields.
func TestConcurrentLookup(t *testing.T) {
	d, dir := openTest(t)
	r, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const writers, ports, rounds = 3, 8, 5000
	deadline := time.Now().Add(20 * time.Second)
	stop := make(chan struct{})
	var wg, readers sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds && time.Now().Before(deadline); i++ {
				port := 30000 + w*ports + i%ports
				e := v4(fmt.Sprintf("p%d.u", port), fmt.Sprintf("127.0.0.1:%d", port))
				h, err := d.Publish(e)
				if err != nil {
					t.Error(err)
					return
				}
				c := e
				c.Inbox = fmt.Sprintf("p%d.c", port)
				c.Peer = ap(fmt.Sprintf("127.0.0.9:%d", port))
				h.Update(c)
				h.Update(e)
				h.Update(c)
				h.Withdraw()
			}
		}(w)
	}
	check := func(dst int, got []Entry) {
		for _, e := range got {
			var port int
			var kind string
			if n, _ := fmt.Sscanf(strings.Replace(e.Inbox, ".", " ", 1), "p%d %s", &port, &kind); n != 2 || port != dst || int(e.Local.Port()) != dst {
				t.Errorf("torn entry for port %d: %+v", dst, e)
			}
			if (kind == "c") != e.Peer.IsValid() {
				t.Errorf("torn entry: inbox %s with peer %v", e.Inbox, e.Peer)
			}
		}
	}
	for g := 0; g < 2; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			var buf []Entry
			last := uint64(0)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				gen := r.Gen()
				if gen < last {
					t.Errorf("generation went back: %d after %d", gen, last)
				}
				last = gen
				port := 30000 + i%(writers*ports)
				buf = r.Lookup(ap(fmt.Sprintf("127.0.0.1:%d", port)), ap(fmt.Sprintf("127.0.0.9:%d", port)), buf)
				check(port, buf)
				if g == 1 && i%50 == 0 {
					if n := r.Sweep(); n != 0 {
						t.Errorf("Sweep removed %d live entries", n)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if r.Gen() < uint64(writers*rounds*5) && time.Now().Before(deadline) {
		t.Errorf("generation %d after %d changes", r.Gen(), writers*rounds*5)
	}
}
