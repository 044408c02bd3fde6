package stats

import (
	"net/netip"
	"strings"
	"testing"
)

// The full view frames addresses as vma_stats does, [1.2.3.4:80], and shows an IPv6 one in its
// usual bracketed form, [::1]:80, not framed twice.
func TestFormatAddresses(t *testing.T) {
	for _, c := range []struct{ local, peer, want4, want6 string }{
		{"127.0.0.1:9400", "10.0.0.1:80", "- Local Address   = [127.0.0.1:9400]", "- Foreign Address = [10.0.0.1:80]"},
		{"[::]:9400", "[::ffff:10.0.0.1]:80", "- Local Address   = [::]:9400", "- Foreign Address = [::ffff:10.0.0.1]:80"},
	} {
		s := SocketSnapshot{FD: 3, Type: 2, Local: netip.MustParseAddrPort(c.local), Peer: netip.MustParseAddrPort(c.peer)}
		text := FormatSocket(s, "")
		for _, w := range []string{c.want4, c.want6} {
			if !strings.Contains(text, w+"\n") {
				t.Errorf("%s -> %s: no line %q in\n%s", c.local, c.peer, w, text)
			}
		}
		if strings.Contains(text, "[[") {
			t.Errorf("framed twice:\n%s", text)
		}
	}
}
