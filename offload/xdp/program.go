package xdp

import (
	"encoding/binary"

	"github.com/cilium/ebpf/asm"
)

// progName is the name of the steering program as the kernel shows it (at most 15
// bytes); a BusyError with this name means another goxio process owns the interface.
const progName = "goxio_steer"

// Offsets in struct xdp_md (linux/bpf.h).
const (
	xdpMDData         = 0
	xdpMDDataEnd      = 4
	xdpMDRxQueueIndex = 16
)

// Return codes of an XDP program.
const (
	xdpPass = 2
)

// Header sizes and fields the program reads.
const (
	ethHdrLen  = 14
	vlanHdrLen = 4
	ipv4MinLen = 20
	ipv6HdrLen = 40
	udpHdrLen  = 8
	protoUDP   = 17
)

// be16 returns the value a 16-bit load of the big-endian bytes of v gives on this
// machine, so the program compares packet fields without swapping them.
func be16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// steeringInstructions returns the steering program for the maps with the given file
// descriptors. IPv4 flow and group keys are 8 bytes: the destination IPv4 address and UDP
// port as they are on the wire, then 2 zero bytes (flowKey); IPv6 flow keys are 20 bytes:
// the destination IPv6 address, the port, 2 zero bytes (flow6Key). Values are a 64-bit hit
// counter the program increments. A group entry with port 0 matches every port. An IPv6
// packet is steered only when its next header is UDP: extension headers (fragments, hop-by-hop
// options, routing headers) and every other protocol, ICMPv6 and neighbour discovery
// included, go to the kernel; IPv6 multicast is not steered.
//
// Registers: r6 = ctx, r7 = packet start, r8 = packet end, r9 = the header being parsed;
// r6-r9 survive helper calls. The IPv4 key lives at r10-8, the IPv6 one at r10-24.
func steeringInstructions(flows, flows6, groups, xsks int) asm.Instructions {
	const (
		lPass = "pass"
		lIPv4 = "ipv4"
		lIPv6 = "ipv6"
		lHit  = "hit"
	)
	// The fragment field: the MF flag and the 13-bit offset (the top 3 bits of the 16
	// are reserved and DF), big-endian 0x3fff.
	fragMask := be16(0x3fff)
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, xdpMDData, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, xdpMDDataEnd, asm.Word),

		// Ethernet header.
		asm.Mov.Reg(asm.R9, asm.R7),
		asm.Add.Imm(asm.R9, ethHdrLen),
		asm.JGT.Reg(asm.R9, asm.R8, lPass),
		asm.LoadMem(asm.R2, asm.R7, 12, asm.Half),
		asm.JEq.Imm(asm.R2, be16(0x8100), "vlan"),
		asm.JNE.Imm(asm.R2, be16(0x88a8), lIPv4),
		// One VLAN tag: the inner EtherType follows it.
		asm.Mov.Reg(asm.R9, asm.R7).WithSymbol("vlan"),
		asm.Add.Imm(asm.R9, ethHdrLen+vlanHdrLen),
		asm.JGT.Reg(asm.R9, asm.R8, lPass),
		asm.LoadMem(asm.R2, asm.R7, 16, asm.Half),

		// IPv4 header: version 4, IHL >= 5, protocol UDP, not a fragment.
		asm.JEq.Imm(asm.R2, be16(0x86dd), lIPv6).WithSymbol(lIPv4),
		asm.JNE.Imm(asm.R2, be16(0x0800), lPass),
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, ipv4MinLen),
		asm.JGT.Reg(asm.R3, asm.R8, lPass),
		asm.LoadMem(asm.R2, asm.R9, 0, asm.Byte),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.And.Imm(asm.R3, 0xf0),
		asm.JNE.Imm(asm.R3, 0x40, lPass),
		asm.And.Imm(asm.R2, 0x0f),
		asm.JLT.Imm(asm.R2, 5, lPass),
		asm.LSh.Imm(asm.R2, 2), // header length in bytes, 20..60
		asm.LoadMem(asm.R3, asm.R9, 9, asm.Byte),
		asm.JNE.Imm(asm.R3, protoUDP, lPass),
		asm.LoadMem(asm.R3, asm.R9, 6, asm.Half),
		asm.And.Imm(asm.R3, fragMask),
		asm.JNE.Imm(asm.R3, 0, lPass),
		asm.LoadMem(asm.R4, asm.R9, 16, asm.Word), // destination address
		asm.StoreMem(asm.RFP, -8, asm.R4, asm.Word),
		asm.LoadMem(asm.R7, asm.R9, 16, asm.Byte), // its first byte, for the multicast test

		// UDP header.
		asm.Add.Reg(asm.R9, asm.R2),
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, udpHdrLen),
		asm.JGT.Reg(asm.R3, asm.R8, lPass),
		asm.LoadMem(asm.R3, asm.R9, 2, asm.Half), // destination port
		asm.StoreMem(asm.RFP, -4, asm.R3, asm.Half),
		asm.StoreImm(asm.RFP, -2, 0, asm.Half),

		// Unicast flow?
		asm.LoadMapPtr(asm.R1, flows),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, lHit),

		// Multicast group, with this port or with any port (0)?
		asm.And.Imm(asm.R7, 0xf0),
		asm.JNE.Imm(asm.R7, 0xe0, lPass),
		asm.LoadMapPtr(asm.R1, groups),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, lHit),
		asm.StoreImm(asm.RFP, -4, 0, asm.Half),
		asm.LoadMapPtr(asm.R1, groups),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, lPass),

		// Hit: count it, then redirect to the socket of the receiving queue, or pass the
		// frame to the kernel when that queue has none.
		asm.Mov.Imm(asm.R1, 1).WithSymbol(lHit),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, xsks),
		asm.LoadMem(asm.R2, asm.R6, xdpMDRxQueueIndex, asm.Word),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),

		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol(lPass),
		asm.Return(),

		// IPv6 header: version 6, next header UDP (no extension header), then the UDP
		// header; key: destination address, port, 2 zero bytes.
		asm.Mov.Reg(asm.R3, asm.R9).WithSymbol(lIPv6),
		asm.Add.Imm(asm.R3, ipv6HdrLen+udpHdrLen),
		asm.JGT.Reg(asm.R3, asm.R8, lPass),
		asm.LoadMem(asm.R2, asm.R9, 0, asm.Byte),
		asm.And.Imm(asm.R2, 0xf0),
		asm.JNE.Imm(asm.R2, 0x60, lPass),
		asm.LoadMem(asm.R2, asm.R9, 6, asm.Byte),
		asm.JNE.Imm(asm.R2, protoUDP, lPass),
		asm.LoadMem(asm.R4, asm.R9, 24, asm.Word),
		asm.StoreMem(asm.RFP, -24, asm.R4, asm.Word),
		asm.LoadMem(asm.R4, asm.R9, 28, asm.Word),
		asm.StoreMem(asm.RFP, -20, asm.R4, asm.Word),
		asm.LoadMem(asm.R4, asm.R9, 32, asm.Word),
		asm.StoreMem(asm.RFP, -16, asm.R4, asm.Word),
		asm.LoadMem(asm.R4, asm.R9, 36, asm.Word),
		asm.StoreMem(asm.RFP, -12, asm.R4, asm.Word),
		asm.LoadMem(asm.R3, asm.R9, ipv6HdrLen+2, asm.Half), // destination port
		asm.StoreMem(asm.RFP, -8, asm.R3, asm.Half),
		asm.StoreImm(asm.RFP, -6, 0, asm.Half),
		asm.LoadMapPtr(asm.R1, flows6),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -24),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, lHit),
		asm.Ja.Label(lPass),
	}
}
