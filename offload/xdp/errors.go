package xdp

import (
	"errors"
	"fmt"
)

// ErrBusy is matched (errors.Is) by a *BusyError: the interface already has an XDP
// program, so this process cannot steer its traffic and must use the kernel.
var ErrBusy = errors.New("interface already has an XDP program")

// ErrNotSupported is wrapped by errors for a feature the kernel or the driver does not
// offer (no XDP attach mode works, no AF_XDP bind mode works).
var ErrNotSupported = errors.New("not supported")

// BusyError says which XDP program already occupies an interface. It matches ErrBusy.
type BusyError struct {
	Ifindex int    // interface index
	Ifname  string // interface name, "" when unknown
	ProgID  uint32 // id of the attached program (bpftool prog show id N), 0 when unknown
	Mode    Mode   // how it is attached
	// ProgName is the attached program's name ("goxio_steer" for another goxio
	// process), "" when it could not be read.
	ProgName string
}

// Error implements error.
func (e *BusyError) Error() string {
	who := "another program"
	if e.ProgName == progName {
		who = "another goxio process"
	}
	name := e.ProgName
	if name == "" {
		name = "?"
	}
	return fmt.Sprintf("interface %s (index %d) already has XDP program %d %q attached in %s mode (%s owns it); its traffic stays with the kernel",
		e.Ifname, e.Ifindex, e.ProgID, name, e.Mode, who)
}

// Is makes errors.Is(err, ErrBusy) true for a *BusyError.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }
