package offload

import "unsafe"

// netpollerProbe is a variable of the engine's image: the runtime's epoll fd registers its
// eventfd with the address of a runtime variable (runtime.netpollEventFd) as the event data, and
// that address lies in the same zero-initialized data mapping as this variable.
var netpollerProbe uintptr

// imageDataAddr returns the address of netpollerProbe. It is only compared with numbers read
// from /proc/self/fdinfo, never dereferenced.
func imageDataAddr() uintptr { return uintptr(unsafe.Pointer(&netpollerProbe)) }
