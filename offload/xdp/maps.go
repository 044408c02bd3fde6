package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Default map sizes (Options).
const (
	DefaultFlowCapacity  = 4096
	DefaultGroupCapacity = 256
)

// Map names as the kernel shows them (at most 15 bytes).
const (
	flowMapName  = "goxio_flows"
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

// flowKey encodes a destination as the steering program builds its lookup key.
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

// maps are the file descriptors of the three maps of the steering program (-1 when
// closed).
type maps struct {
	flows, groups, xsks int
}

// newMaps creates the maps: flows and groups hold flowCap and groupCap entries, the
// XSKMAP one socket per receive queue.
func newMaps(flowCap, groupCap, queues int) (*maps, error) {
	m := &maps{flows: -1, groups: -1, xsks: -1}
	var err error
	if m.flows, err = mapCreate(bpfMapTypeHash, flowKeySize, flowValueSize, uint32(flowCap), flowMapName); err != nil {
		return nil, err
	}
	if m.groups, err = mapCreate(bpfMapTypeHash, flowKeySize, flowValueSize, uint32(groupCap), groupMapName); err != nil {
		m.close()
		return nil, err
	}
	if m.xsks, err = mapCreate(bpfMapTypeXSKMap, 4, 4, uint32(queues), xskMapName); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// close releases the maps (the kernel frees each with its last reference, the
// program's included).
func (m *maps) close() error {
	var first error
	for _, fd := range []*int{&m.flows, &m.groups, &m.xsks} {
		if *fd >= 0 {
			if err := unix.Close(*fd); err != nil && first == nil {
				first = err
			}
			*fd = -1
		}
	}
	return first
}
