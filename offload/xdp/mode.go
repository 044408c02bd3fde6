package xdp

// Mode is the way an XDP program is attached to an interface.
type Mode uint8

// Attach modes.
const (
	ModeNone    Mode = iota // no program attached
	ModeNative              // in the driver (XDP_FLAGS_DRV_MODE)
	ModeGeneric             // in the core network stack, after the skb is built (XDP_FLAGS_SKB_MODE)
	ModeOffload             // on the NIC (XDP_FLAGS_HW_MODE); never chosen by Attach
	ModeMulti               // several programs in different modes (reported for other owners only)
)

// String returns the mode's name as ip-link(8) prints it.
func (m Mode) String() string {
	switch m {
	case ModeNone:
		return "none"
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	case ModeOffload:
		return "offload"
	case ModeMulti:
		return "multi"
	}
	return "unknown"
}
