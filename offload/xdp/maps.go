package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// Default map sizes (Options).
const (
	DefaultFlowCapacity  = 4096
	DefaultGroupCapacity = 256
)

// Map names as the kernel shows them (at most 15 bytes).
const (
	flowMapName  = "goxio_flows"
	flow6MapName = "goxio_flows6"
	groupMapName = "goxio_groups"
	xskMapName   = "goxio_xsks"
)

// flowKeySize and flowValueSize describe the flow and group maps: the key is the
// destination IPv4 address and UDP port as on the wire plus 2 zero bytes; the value
// counts the frames that matched.
const (
	flowKeySize   = 8
	flowValueSize = 8
)

// flow6KeySize is the key of the IPv6 flow map: the destination IPv6 address and UDP port as
// on the wire plus 2 zero bytes; the value is flowValueSize too.
const flow6KeySize = 20

// flowKey encodes an IPv4 destination as the steering program builds its lookup key.
func flowKey(addr netip.Addr, port uint16) ([flowKeySize]byte, error) {
	var k [flowKeySize]byte
	if !addr.Is4() {
		return k, fmt.Errorf("flow key %v: not an IPv4 address: %w", addr, ErrNotSupported)
	}
	a := addr.As4()
	copy(k[:4], a[:])
	binary.BigEndian.PutUint16(k[4:], port)
	return k, nil
}

// flow6Key encodes an IPv6 destination (not an IPv4-mapped one: those arrive as IPv4) as
// the steering program builds its IPv6 lookup key.
func flow6Key(addr netip.Addr, port uint16) ([flow6KeySize]byte, error) {
	var k [flow6KeySize]byte
	if !addr.Is6() || addr.Is4In6() {
		return k, fmt.Errorf("flow key %v: not an IPv6 address: %w", addr, ErrNotSupported)
	}
	a := addr.As16()
	copy(k[:16], a[:])
	binary.BigEndian.PutUint16(k[16:], port)
	return k, nil
}

// maps are the four maps of the steering program (nil when closed).
type maps struct {
	flows, flows6, groups, xsks *ebpf.Map
}

// newMaps creates the maps: flows and flows6 (IPv4, IPv6) hold flowCap entries each, groups
// groupCap, the
// XSKMAP one socket per receive queue.
func newMaps(flowCap, groupCap, queues int) (*maps, error) {
	m := &maps{}
	var err error
	if m.flows, err = ebpf.NewMap(&ebpf.MapSpec{Name: flowMapName, Type: ebpf.Hash, KeySize: flowKeySize,
		ValueSize: flowValueSize, MaxEntries: uint32(flowCap)}); err != nil {
		return nil, fmt.Errorf("bpf map %s: %w", flowMapName, err)
	}
	if m.flows6, err = ebpf.NewMap(&ebpf.MapSpec{Name: flow6MapName, Type: ebpf.Hash, KeySize: flow6KeySize,
		ValueSize: flowValueSize, MaxEntries: uint32(flowCap)}); err != nil {
		m.close()
		return nil, fmt.Errorf("bpf map %s: %w", flow6MapName, err)
	}
	if m.groups, err = ebpf.NewMap(&ebpf.MapSpec{Name: groupMapName, Type: ebpf.Hash, KeySize: flowKeySize,
		ValueSize: flowValueSize, MaxEntries: uint32(groupCap)}); err != nil {
		m.close()
		return nil, fmt.Errorf("bpf map %s: %w", groupMapName, err)
	}
	if m.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: xskMapName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4,
		MaxEntries: uint32(queues)}); err != nil {
		m.close()
		return nil, fmt.Errorf("bpf map %s: %w", xskMapName, err)
	}
	return m, nil
}

// fds returns the maps' descriptors.
func (m *maps) fds() []int {
	var out []int
	for _, x := range []*ebpf.Map{m.flows, m.flows6, m.groups, m.xsks} {
		if x != nil {
			out = append(out, x.FD())
		}
	}
	return out
}

// close releases the maps (the kernel frees each with its last reference, the
// program's included).
func (m *maps) close() error {
	var first error
	for _, x := range []**ebpf.Map{&m.flows, &m.flows6, &m.groups, &m.xsks} {
		if *x != nil {
			if err := (*x).Close(); err != nil && first == nil {
				first = err
			}
			*x = nil
		}
	}
	return first
}
