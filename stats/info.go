package stats

import (
	"encoding/binary"
	"errors"
)

// Param is one library parameter and its value, as the start-up banner
// prints it (for example VMA_RX_POLL=100000).
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ProcessInfo describes the process that owns a segment. The writer fills
// the zero fields it can find itself.
type ProcessInfo struct {
	Pid       int      `json:"pid"`        // process id; 0 = the calling process
	StartTime uint64   `json:"start_time"` // clock ticks after boot (/proc/PID/stat field 22); 0 = read it
	Cmdline   []string `json:"cmdline"`    // argv; nil = read /proc/self/cmdline
	AppID     string   `json:"app_id"`     // VMA_APPLICATION_ID
	Version   string   `json:"version"`    // library version
	Params    []Param  `json:"params"`     // parameter values
}

// Info area encoding: a little-endian uint32 byte count, then records of
// one tag byte, a little-endian uint32 length and the bytes.
const (
	tagArg        = 1
	tagAppID      = 2
	tagVersion    = 3
	tagParamName  = 4
	tagParamValue = 5
)

// encodeInfo serializes the strings of info, dropping whole records that
// would make the area exceed infoMaxBytes.
func encodeInfo(info ProcessInfo) []byte {
	b := make([]byte, 4, 256)
	add := func(tag byte, s string) bool {
		if len(b)+5+len(s) > infoMaxBytes {
			return false
		}
		b = append(b, tag)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
		return true
	}
	add(tagVersion, info.Version)
	add(tagAppID, info.AppID)
	for _, a := range info.Cmdline {
		if !add(tagArg, a) {
			break
		}
	}
	for _, p := range info.Params {
		if len(b)+10+len(p.Name)+len(p.Value) > infoMaxBytes {
			break
		}
		add(tagParamName, p.Name)
		add(tagParamValue, p.Value)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

var errInfo = errors.New("process info area is corrupt")

// decodeInfo parses an info area into the string fields of a ProcessInfo.
// Everything is bounds-checked: the area comes from another process.
func decodeInfo(b []byte) (ProcessInfo, error) {
	var info ProcessInfo
	if len(b) < 4 {
		return info, errInfo
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return info, errInfo
	}
	b = b[4 : 4+n]
	pendingName := ""
	havePending := false
	for len(b) > 0 {
		if len(b) < 5 {
			return info, errInfo
		}
		tag := b[0]
		l := binary.LittleEndian.Uint32(b[1:5])
		if uint64(l) > uint64(len(b)-5) {
			return info, errInfo
		}
		s := string(b[5 : 5+l])
		b = b[5+l:]
		switch tag {
		case tagArg:
			info.Cmdline = append(info.Cmdline, s)
		case tagAppID:
			info.AppID = s
		case tagVersion:
			info.Version = s
		case tagParamName:
			pendingName, havePending = s, true
		case tagParamValue:
			if havePending {
				info.Params = append(info.Params, Param{Name: pendingName, Value: s})
				havePending = false
			}
		default:
			// Unknown record from a newer minor layout: skip it.
		}
	}
	return info, nil
}
