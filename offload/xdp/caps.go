package xdp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Capability numbers (linux/capability.h) the AF_XDP path needs.
const (
	capNetAdmin = 12
	capNetRaw   = 13
	capSysAdmin = 21
	capBPF      = 39
)

// MissingCapabilities returns the names of the effective capabilities the calling
// thread lacks for the AF_XDP path: CAP_NET_ADMIN (attach XDP, load an XDP program),
// CAP_NET_RAW (AF_XDP sockets) and CAP_BPF (create maps and programs; CAP_SYS_ADMIN
// does as well). An empty list means none is missing.
func MissingCapabilities() ([]string, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, fmt.Errorf("capget: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	if !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if !has(capNetRaw) {
		missing = append(missing, "CAP_NET_RAW")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF")
	}
	return missing, nil
}
