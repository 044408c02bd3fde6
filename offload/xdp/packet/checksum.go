package packet

import (
	"encoding/binary"
	"math/bits"
)

// Internet checksum (RFC 1071). The running sum is a 64-bit ones-complement sum of big-endian
// words; because 0xffff divides 2^64-1, folding it to 16 bits gives the 16-bit ones-complement sum.

// csumAdd adds x to acc with end-around carry.
func csumAdd(acc, x uint64) uint64 {
	s, c := bits.Add64(acc, x, 0)
	return s + c // s+c cannot overflow: when c is 1, s is at most 2^64-2
}

// csum adds b to acc as big-endian 16-bit words, the last odd byte padded with a zero. b must start
// at an even offset of the checksummed region.
func csum(acc uint64, b []byte) uint64 {
	var c uint64
	for len(b) >= 32 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[8:]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[16:]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), c)
		b = b[8:]
	}
	acc = csumAdd(acc, c)
	if len(b) >= 4 {
		acc = csumAdd(acc, uint64(binary.BigEndian.Uint32(b)))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc = csumAdd(acc, uint64(binary.BigEndian.Uint16(b)))
		b = b[2:]
	}
	if len(b) == 1 {
		acc = csumAdd(acc, uint64(b[0])<<8)
	}
	return acc
}

// csumFold folds a running sum to 16 bits (the ones-complement sum, not yet complemented).
func csumFold(acc uint64) uint16 {
	s := acc>>32 + acc&0xffffffff
	s = s>>32 + s&0xffffffff
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return uint16(s)
}

// pseudoSum is the running sum of the IPv4 pseudo-header of a UDP datagram of udpLen bytes.
func pseudoSum(src, dst [4]byte, udpLen int) uint64 {
	return uint64(binary.BigEndian.Uint32(src[:])) + uint64(binary.BigEndian.Uint32(dst[:])) +
		protoUDP + uint64(udpLen)
}

// pseudoSum6 is the running sum of the IPv6 pseudo-header of a UDP datagram of udpLen bytes
// (RFC 8200 section 8.1: addresses, upper-layer length, next header).
func pseudoSum6(src, dst *[16]byte, udpLen int) uint64 {
	return csumAdd(csum(csum(0, src[:]), dst[:]), protoUDP+uint64(udpLen))
}
