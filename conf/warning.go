package conf

// Warning is a parameter problem that Load worked around: an unknown name, a
// value that cannot be parsed or is out of range (the parameter keeps its
// previous value), or a parameters file that cannot be read.
type Warning struct {
	Source string // where the problem is: "env VMA_RX_POLL", "params.toml:3", "env GOXIO_PARAMS_FILE"
	Msg    string // what is wrong and what goxio does instead
}

// Error formats the warning as "source: message".
func (w Warning) Error() string { return w.Source + ": " + w.Msg }

// String formats the warning as "source: message".
func (w Warning) String() string { return w.Error() }
