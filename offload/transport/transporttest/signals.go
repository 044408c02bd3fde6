package transporttest

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/transport"
)

// EnterCall notes c as a call entering the engine does (shim/preload/preload.h's
// goxio_sig_enter): the counters a wait of that call compares with (transport.SigCounters.Entry).
// Tests that play the preload library's part call it before each call they make.
func EnterCall(c *transport.SigCounters) {
	atomic.StoreUint32(&c.Entry[0], atomic.LoadUint32(&c.All))
	atomic.StoreUint32(&c.Entry[1], atomic.LoadUint32(&c.Interrupting))
	atomic.StoreUint32(&c.Entry[2], atomic.LoadUint32(&c.Deferred))
}
