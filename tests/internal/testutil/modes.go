package testutil

// Mode says which ends of a client/server pair run with the library preloaded.
type Mode struct {
	Name   string
	Server bool // the server runs under LD_PRELOAD
	Client bool // the client runs under LD_PRELOAD
}

// Kernel runs both ends without the library: the reference.
var Kernel = Mode{Name: "kernel"}

// Both runs both ends with the library.
var Both = Mode{Name: "goxio", Server: true, Client: true}

// ServerOnly runs only the server with the library.
var ServerOnly = Mode{Name: "goxio-server", Server: true}

// ClientOnly runs only the client with the library.
var ClientOnly = Mode{Name: "goxio-client", Client: true}

// AllModes is the reference run, both ends with the library, then each end alone with it.
var AllModes = []Mode{Kernel, Both, ServerOnly, ClientOnly}

// MainModes is the reference run and the run with the library on both ends.
var MainModes = []Mode{Kernel, Both}

// ServerEnv returns the environment for the server side of m.
func (m Mode) ServerEnv(lib string, extra ...string) []string {
	if m.Server {
		return Env(lib, extra...)
	}
	return Env("", extra...)
}

// ClientEnv returns the environment for the client side of m.
func (m Mode) ClientEnv(lib string, extra ...string) []string {
	if m.Client {
		return Env(lib, extra...)
	}
	return Env("", extra...)
}
