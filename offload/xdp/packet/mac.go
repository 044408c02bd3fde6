package packet

// MAC is an Ethernet (EUI-48) address.
type MAC [6]byte

// BroadcastMAC is ff:ff:ff:ff:ff:ff.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// MulticastMAC returns the Ethernet address of an IPv4 multicast group (RFC 1112: 01:00:5e and the
// group's low 23 bits). It does not check that group is in 224.0.0.0/4.
func MulticastMAC(group [4]byte) MAC {
	return MAC{0x01, 0x00, 0x5e, group[1] & 0x7f, group[2], group[3]}
}

// IsMulticastIP reports whether a is an IPv4 multicast group (224.0.0.0/4).
func IsMulticastIP(a [4]byte) bool { return a[0]&0xf0 == 0xe0 }

// IsZero reports whether m is 00:00:00:00:00:00.
func (m MAC) IsZero() bool { return m == MAC{} }

// String formats m as six colon-separated lower-case hex bytes.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 17)
	for i, x := range m {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, hex[x>>4], hex[x&0xf])
	}
	return string(b)
}
