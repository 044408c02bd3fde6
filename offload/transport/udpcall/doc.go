// Package udpcall holds what the UDP transports (offload/transport/shm, offload/transport/xdp)
// share about serving a receive call: reading the call's arguments from the program's memory
// (Rx, ParseRx, ParseMsg) and what a blocking receive watches besides the data (Wait: the
// socket's receive timeout and the thread's signal handlers). Everything here runs on the
// caller's thread inside the program: no goroutines, timers, os.File or net.
package udpcall
