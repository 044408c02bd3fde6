package stats

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// Text form of one socket, shared by the library (fd dumps, VMA_STATS_FILE)
// and goxio_stats -v 3. It follows vma_stats' full view: a separator, the fd,
// a description, then one line per active counter group, sizes in
// kilobytes (1024 bytes, truncated).

// Separator is the line between blocks in full views.
const Separator = "======================================================"

// FormatSocket returns the multi-line description of s. suffix is appended
// to counter lines ("/s" for per-second deltas, "" for totals).
func FormatSocket(s SocketSnapshot, suffix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\tFd=[%d]\n", Separator, s.FD)
	proto := strings.ToUpper(s.Proto())
	blocking := "Non-blocked"
	if s.Blocking {
		blocking = "Blocked"
	}
	fmt.Fprintf(&b, "- %s, %s", proto, blocking)
	if s.State != TCPNone {
		fmt.Fprintf(&b, ", %s", s.State)
	}
	b.WriteString("\n")
	if s.Local.IsValid() {
		fmt.Fprintf(&b, "- Local Address   = %s\n", bracketed(s.Local))
	}
	if s.Peer.IsValid() {
		fmt.Fprintf(&b, "- Foreign Address = %s\n", bracketed(s.Peer))
	}
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "- Member of = [%s]\n", g)
	}
	fmt.Fprintf(&b, "- Transport = %s", s.Transport)
	if s.Reason != ReasonNone {
		fmt.Fprintf(&b, " (%s)", s.Reason)
	}
	b.WriteString("\n")
	if s.RuleLine != 0 || s.Rule != "" {
		fmt.Fprintf(&b, "- Rule = line %d: %s\n", s.RuleLine, s.Rule)
	}
	if s.Inode != 0 {
		fmt.Fprintf(&b, "- Inode = %d\n", s.Inode)
	}
	c := s.Counters
	active := false
	line := func(cond bool, format string, args ...any) {
		if cond {
			fmt.Fprintf(&b, format, args...)
			active = true
		}
	}
	line(c.TxBytes|c.TxPackets|c.TxDrops|c.TxErrors|c.TxEAGAIN != 0,
		"Tx Offload: %d / %d / %d / %d / %d [kilobytes/packets/drops/eagains/errors]%s\n",
		c.TxBytes/1024, c.TxPackets, c.TxDrops, c.TxEAGAIN, c.TxErrors, suffix)
	line(c.TxOSBytes|c.TxOSPackets|c.TxOSEAGAIN|c.TxOSErrors != 0,
		"Tx OS info: %d / %d / %d / %d [kilobytes/packets/eagains/errors]%s\n",
		c.TxOSBytes/1024, c.TxOSPackets, c.TxOSEAGAIN, c.TxOSErrors, suffix)
	line(c.RxBytes|c.RxPackets|c.RxEAGAIN|c.RxErrors != 0,
		"Rx Offload: %d / %d / %d / %d [kilobytes/packets/eagains/errors]%s\n",
		c.RxBytes/1024, c.RxPackets, c.RxEAGAIN, c.RxErrors, suffix)
	line(c.RxOSBytes|c.RxOSPackets|c.RxOSEAGAIN|c.RxOSErrors != 0,
		"Rx OS info: %d / %d / %d / %d [kilobytes/packets/eagains/errors]%s\n",
		c.RxOSBytes/1024, c.RxOSPackets, c.RxOSEAGAIN, c.RxOSErrors, suffix)
	if c.RxPackets|c.RxQueuePackets|c.RxQueuePktsMax|c.RxDropPackets != 0 {
		fmt.Fprintf(&b, "Rx byte: cur %d / max %d / dropped%s %d / limit %d\n",
			c.RxQueueBytes, c.RxQueueByteMax, suffix, c.RxDropBytes, s.RxLimit)
		fmt.Fprintf(&b, "Rx pkt : cur %d / max %d / dropped%s %d\n",
			c.RxQueuePackets, c.RxQueuePktsMax, suffix, c.RxDropPackets)
		active = true
	}
	if c.PollHit|c.PollMiss != 0 {
		fmt.Fprintf(&b, "Rx poll: %d / %d (%2.2f%%) [miss/hit]%s\n", c.PollMiss, c.PollHit,
			PollPercent(c.PollHit, c.PollMiss), suffix)
		active = true
	}
	line(c.Retransmits != 0, "Retransmissions: %d%s\n", c.Retransmits, suffix)
	line(c.RxZcopy|c.RxHeld != 0, "Rx zero-copy: %d / %d [packets/held now]%s\n", c.RxZcopy, c.RxHeld, suffix)
	if !active {
		b.WriteString("Rx and Tx were not active\n")
	}
	return b.String()
}

// PollPercent is hits / (hits + misses) in percent (0 without polls).
func PollPercent(hit, miss uint64) float64 {
	if hit == 0 {
		return 0
	}
	return float64(hit) / float64(hit+miss) * 100
}

// AppendFinal appends the final counters of a closing socket to fd (the
// VMA_STATS_FILE descriptor, opened with O_APPEND) with raw write calls.
func AppendFinal(fd int, s SocketSnapshot) error {
	b := []byte(FormatSocket(s, ""))
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("append final stats of fd %d: %w", s.FD, err)
		}
		if n == 0 {
			return fmt.Errorf("append final stats of fd %d: %w", s.FD, unix.EIO)
		}
		b = b[n:]
	}
	return nil
}

// bracketed is an address as vma_stats frames it, [1.2.3.4:80]; an IPv6 one is already
// bracketed in its usual form, [::1]:80, and is not framed twice.
func bracketed(a netip.AddrPort) string {
	if a.Addr().Is6() {
		return a.String()
	}
	return "[" + a.String() + "]"
}
