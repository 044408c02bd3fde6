package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// refChecksum is the textbook RFC 1071 loop, 16 bits at a time, as an oracle for csum.
func refChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func TestChecksumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if n%7 == 0 { // all-ones data stresses the carries
			for i := range b {
				b[i] = 0xff
			}
		}
		if got, want := csumFold(csum(0, b)), refChecksum(b); got != want {
			t.Fatalf("len %d: csum %#04x, reference %#04x", n, got, want)
		}
	}
}

// TestBuildKnownFrame checks Build against a frame written out by hand (RFC 791/768 layout,
// checksums from the reference loop).
func TestBuildKnownFrame(t *testing.T) {
	h := Header{
		DstMAC: MAC{0x02, 0, 0, 0, 0, 0x02}, SrcMAC: MAC{0x02, 0, 0, 0, 0, 0x01},
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 4000, DstPort: 5000,
		TOS: 0xb8, TTL: 64, ID: 0x1234, DontFragment: true,
	}
	payload := []byte("hello")
	buf := make([]byte, 128)
	n, err := Build(buf, &h, [][]byte{payload[:2], nil, payload[2:]}, 5, 1500)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	want := []byte{
		0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,
		0x45, 0xb8, 0, 33, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
		0x0f, 0xa0, 0x13, 0x88, 0, 13, 0, 0,
		'h', 'e', 'l', 'l', 'o',
	}
	binary.BigEndian.PutUint16(want[24:], ^refChecksum(want[14:34]))
	pseudo := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0, 17, 0, 13}
	binary.BigEndian.PutUint16(want[40:], ^refChecksum(append(pseudo, want[34:]...)))
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("frame\n got %x\nwant %x", buf[:n], want)
	}
}

func randomHeader(r *rand.Rand) Header {
	var h Header
	for i := range h.DstMAC {
		h.DstMAC[i], h.SrcMAC[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	for i := range h.Src {
		h.Src[i], h.Dst[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	h.SrcPort, h.DstPort = uint16(r.Uint32()), uint16(r.Uint32())
	h.TOS, h.TTL, h.ID = uint8(r.Uint32()), uint8(r.Uint32()), uint16(r.Uint32())
	h.DontFragment = r.IntN(2) == 0
	h.NoChecksum = r.IntN(5) == 0
	return h
}

// TestBuildParseRoundTrip: Parse(Build(x)) == x for random headers, payload sizes and iovec
// splits, with checksum verification.
func TestBuildParseRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, HeaderLen+MaxPayload)
	for i := range 2000 {
		h := randomHeader(r)
		size := r.IntN(1500)
		if i%100 == 0 {
			size = MaxPayload - r.IntN(3)
		}
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		var iov [][]byte
		for rest := payload; len(rest) > 0; {
			k := 1 + r.IntN(len(rest))
			iov = append(iov, rest[:k])
			rest = rest[k:]
		}
		n, err := Build(buf, &h, iov, size, 0xffff)
		if err != nil {
			t.Fatalf("Build %d bytes: %v", size, err)
		}
		if n != HeaderLen+size {
			t.Fatalf("Build length %d, want %d", n, HeaderLen+size)
		}
		var got Header
		p, err := Parse(buf[:n], &got, VerifyAll)
		if err != nil {
			t.Fatalf("Parse(Build(%+v)) %d bytes: %v", h, size, err)
		}
		if got != h {
			t.Fatalf("header\n got %+v\nwant %+v", got, h)
		}
		if !bytes.Equal(p, payload) {
			t.Fatalf("payload of %d bytes differs", size)
		}
		if size > 0 && &p[0] != &buf[HeaderLen] {
			t.Fatalf("payload does not alias the frame")
		}
	}
}

func TestBuildErrors(t *testing.T) {
	h := Header{TTL: 1}
	buf := make([]byte, 100)
	p := make([]byte, 58)
	cases := []struct {
		name       string
		buf        []byte
		iov        [][]byte
		total, mtu int
		want       error
	}{
		{"fits exactly", buf, [][]byte{p}, 58, 86, nil},
		{"over mtu by one", buf, [][]byte{p}, 58, 85, ErrTooBig},
		{"over buffer by one", buf[:99], [][]byte{p}, 58, 1500, ErrTooBig},
		{"zero mtu", buf, nil, 0, 0, ErrTooBig},
		{"above MaxPayload", make([]byte, 70000), [][]byte{make([]byte, MaxPayload+1)}, MaxPayload + 1, 1 << 20, ErrTooBig},
		{"negative total", buf, nil, -1, 1500, ErrBadLength},
		{"total too small", buf, [][]byte{p}, 57, 1500, ErrBadLength},
		{"total too large", make([]byte, 200), [][]byte{p}, 59, 1500, ErrBadLength},
		{"empty payload", buf, nil, 0, 28, nil},
	}
	for _, c := range cases {
		n, err := Build(c.buf, &h, c.iov, c.total, c.mtu)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if err == nil && n != HeaderLen+c.total {
			t.Errorf("%s: length %d", c.name, n)
		}
	}
}

func TestMulticastMAC(t *testing.T) {
	cases := []struct {
		group [4]byte
		want  MAC
	}{
		{[4]byte{224, 0, 0, 1}, MAC{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}},
		{[4]byte{239, 255, 255, 250}, MAC{0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa}},
		{[4]byte{225, 128, 2, 3}, MAC{0x01, 0x00, 0x5e, 0x00, 0x02, 0x03}}, // bit 24 dropped
	}
	for _, c := range cases {
		if got := MulticastMAC(c.group); got != c.want {
			t.Errorf("MulticastMAC(%v) = %v, want %v", c.group, got, c.want)
		}
		if !IsMulticastIP(c.group) {
			t.Errorf("IsMulticastIP(%v) false", c.group)
		}
	}
	if IsMulticastIP([4]byte{240, 0, 0, 1}) || IsMulticastIP([4]byte{223, 255, 255, 255}) {
		t.Errorf("IsMulticastIP true outside 224.0.0.0/4")
	}
	if s := (MAC{0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa}).String(); s != "01:00:5e:7f:ff:fa" {
		t.Errorf("String %q", s)
	}
}

func TestBuildParseAllocateNothing(t *testing.T) {
	h := Header{Src: [4]byte{1, 2, 3, 4}, Dst: [4]byte{5, 6, 7, 8}, TTL: 64}
	buf := make([]byte, 2048)
	iov := [][]byte{make([]byte, 700), make([]byte, 701)}
	var out Header
	allocs := testing.AllocsPerRun(100, func() {
		n, err := Build(buf, &h, iov, 1401, 1500)
		if err != nil {
			panic(err)
		}
		if _, err := Parse(buf[:n], &out, VerifyAll); err != nil {
			panic(err)
		}
		if _, err := Parse(buf[:10], &out, VerifyAll); err == nil {
			panic("truncated frame parsed")
		}
	})
	if allocs != 0 {
		t.Fatalf("Build+Parse allocate %.1f times per run", allocs)
	}
}
