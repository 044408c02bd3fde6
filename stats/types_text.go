package stats

import "fmt"

// Parsing the names that MarshalText prints, so JSON documents from
// goxio_stats --json decode back into snapshots.

func parseName[T ~uint8](kind string, names []string, b []byte) (T, error) {
	for i, n := range names {
		if n == string(b) {
			return T(i), nil
		}
	}
	var v uint8
	if _, err := fmt.Sscanf(string(b), kind+"(%d)", &v); err == nil {
		return T(v), nil
	}
	return 0, fmt.Errorf("unknown %s %q", kind, b)
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Transport) UnmarshalText(b []byte) (err error) {
	*t, err = parseName[Transport]("transport", transportNames[:], b)
	return err
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Reason) UnmarshalText(b []byte) (err error) {
	*r, err = parseName[Reason]("reason", reasonNames[:], b)
	return err
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *TCPState) UnmarshalText(b []byte) (err error) {
	*s, err = parseName[TCPState]("STATE", tcpStateNames[:], b)
	return err
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *IomuxKind) UnmarshalText(b []byte) (err error) {
	*k, err = parseName[IomuxKind]("iomux", iomuxNames[:], b)
	return err
}
