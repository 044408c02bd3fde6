package discovery

import "github.com/goxio/goxio/internal/procstat"

// Process identity: a pid alone can be reused, so every entry also records its owner's start
// time; an entry is live only while a process with that pid and that start time exists
// (internal/procstat).

func parseStat(b []byte) (state byte, start uint64, err error) { return procstat.Parse(b) }

func selfStartTime() (uint64, error) { return procstat.SelfStart() }

func processAlive(pid int, start uint64) bool { return procstat.Alive(pid, start) }

func processAliveRecent(pid int, start uint64) bool { return procstat.AliveRecent(pid, start) }
