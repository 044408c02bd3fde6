package stats

import (
	"encoding/json"
	"testing"
)

func TestEnumTextRoundTrip(t *testing.T) {
	type all struct {
		T Transport
		R Reason
		S TCPState
		K IomuxKind
	}
	for _, v := range []all{{TransportXDP, ReasonDisabled, TCPListen, IomuxEpoll}, {TransportOS, ReasonNone, TCPNone, IomuxSelect},
		{Transport(42), Reason(99), TCPState(200), IomuxKind(7)}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back all
		if err := json.Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("%s: got %+v %v, want %+v", b, back, err, v)
		}
	}
	var tr Transport
	if err := tr.UnmarshalText([]byte("carrier pigeon")); err == nil {
		t.Error("unknown transport name accepted")
	}
}
