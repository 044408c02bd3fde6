// Package udpcall holds what the UDP transports (offload/transport/shm, offload/transport/xdp)
// share about serving a receive call: reading the call's arguments from the program's memory
// (Rx, ParseRx, ParseMsg); the wait itself is offload/internal/wait's. Everything here runs on the caller's thread inside the program: no
// goroutines, timers, os.File or net.
package udpcall
