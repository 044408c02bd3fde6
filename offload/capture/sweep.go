package capture

import (
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/internal/shmseg"
)

// Sweep removes this user's capture segments that nobody will remove: those whose tool died
// (killed while its process was idle, so no tap noticed) or whose process is gone. The tool
// calls it when it starts. It returns how many it removed.
func Sweep() int {
	prefix := "goxio." + strconv.Itoa(unix.Geteuid()) + ".cap."
	sw := shmseg.Sweeper{Prefix: prefix, PID: shmseg.PIDField(prefix), HeaderBytes: HeaderSize}
	sw.Judge = func(name string, h []byte) bool {
		pidS, genS, ok := strings.Cut(strings.TrimPrefix(name, prefix), ".")
		pid, err1 := strconv.Atoi(pidS)
		gen, err2 := strconv.ParseUint(genS, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return false
		}
		toolPid, toolStart := int(gen>>32), uint64(0)
		if binary.NativeEndian.Uint64(h[HMagic*8:]) == Magic {
			toolPid, toolStart = int(binary.NativeEndian.Uint64(h[HToolPid*8:])), binary.NativeEndian.Uint64(h[HToolStart*8:])
		}
		return !procstat.Alive(toolPid, toolStart) || !procstat.Alive(pid, 0)
	}
	return sw.Sweep(ShmDir)
}
