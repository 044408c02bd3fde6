// Package offload is the goxio engine: the socket objects of the sockets the library serves, the
// fd registry that maps the program's fd numbers to them, the rule decisions that choose between
// offload and the kernel, and the transports that carry the data.
//
// The shim calls Engine.Call for every intercepted call on an fd the C-side table marks as the
// engine's. An engine socket always sits on a real kernel socket with the same fd number (the
// kernel owns fd numbers); the engine keeps the C-side table in step through the FDTable it is
// given. Everything the engine tells the kernel goes through raw system calls (internal/sysc).
package offload
