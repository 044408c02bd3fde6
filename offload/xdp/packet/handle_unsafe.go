package packet

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// handleFDs returns the descriptors of h's sockets. The Handle keeps them in an unexported map
// (sockets map[int]*nl.SocketHandle, vishvananda/netlink v1.3.1, pinned in go.mod) and has no
// accessor; the engine must know them to keep them out of the program's reach.
//
// Invariant of the unsafe use: the map's values are *nl.SocketHandle (checked by type below
// before any conversion), read while h is alive and before it is shared; the pointer is only
// read through, never stored.
func handleFDs(h *netlink.Handle) ([]int, error) {
	v := reflect.ValueOf(h).Elem().FieldByName("sockets")
	want := reflect.TypeOf(map[int]*nl.SocketHandle(nil))
	if !v.IsValid() || v.Type() != want {
		return nil, fmt.Errorf("netlink handle: sockets of an unknown shape: %w", ErrNetlink)
	}
	var fds []int
	for it := v.MapRange(); it.Next(); {
		sh := (*nl.SocketHandle)(unsafe.Pointer(it.Value().Pointer()))
		if sh != nil && sh.Socket != nil {
			fds = append(fds, sh.Socket.GetFd())
		}
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("netlink handle: no socket: %w", ErrNetlink)
	}
	return fds, nil
}
