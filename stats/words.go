package stats

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
)

// Helpers that move strings and addresses in and out of segment words, one
// atomic word access at a time.

// storeString writes s into dst as NUL-padded bytes, truncated so that at
// least one NUL remains.
func storeString(dst []uint64, s string) {
	max := len(dst)*8 - 1
	if len(s) > max {
		s = s[:max]
	}
	var b [8]byte
	for i := range dst {
		clear(b[:])
		if lo := i * 8; lo < len(s) {
			copy(b[:], s[lo:])
		}
		atomic.StoreUint64(&dst[i], binary.LittleEndian.Uint64(b[:]))
	}
}

// loadString reads a NUL-padded string written by storeString. Bytes after
// the first NUL are ignored.
func loadString(src []uint64) string {
	if len(src) == 0 || atomic.LoadUint64(&src[0]) == 0 {
		return ""
	}
	b := make([]byte, 0, len(src)*8)
	for i := range src {
		b = binary.LittleEndian.AppendUint64(b, atomic.LoadUint64(&src[i]))
	}
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// storeBytes copies b into dst word by word (zero padded).
func storeBytes(dst []uint64, b []byte) {
	var w [8]byte
	for i := range dst {
		clear(w[:])
		if lo := i * 8; lo < len(b) {
			copy(w[:], b[lo:])
		}
		atomic.StoreUint64(&dst[i], binary.LittleEndian.Uint64(w[:]))
	}
}

// loadBytes copies src into a new byte slice.
func loadBytes(src []uint64) []byte {
	b := make([]byte, 0, len(src)*8)
	for i := range src {
		b = binary.LittleEndian.AppendUint64(b, atomic.LoadUint64(&src[i]))
	}
	return b
}

// addrWords returns the two words holding a's 16-byte form.
func addrWords(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// wordsAddr rebuilds an address from addrWords; is4 unmaps it to IPv4.
func wordsAddr(hi, lo uint64, is4 bool) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	a := netip.AddrFrom16(b)
	if is4 {
		a = a.Unmap()
	}
	return a
}

// storeMax raises the gauge at p to v if v is larger (several threads may
// race; the largest value wins).
func storeMax(p *uint64, v uint64) {
	for {
		old := atomic.LoadUint64(p)
		if v <= old || atomic.CompareAndSwapUint64(p, old, v) {
			return
		}
	}
}

// nonNeg converts a count that should never be negative.
func nonNeg(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}
