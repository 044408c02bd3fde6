package stats

import "github.com/goxio/goxio/internal/seqlock"

// Seqlock on a slot's first word (internal/seqlock, Begin and End): writers are serialized by
// the Writer's mutex; readers never block the writer.

// readTries bounds how long a reader waits for one slot. A writer holds the
// seqlock for a few dozen stores; a slot that stays odd belongs to a process
// that died while writing it and is reported as busy instead of hanging.
const readTries = 10000

// readBudget bounds the retries of one whole snapshot, so that a segment
// whose every slot is stuck (a crashed or malicious writer) costs
// milliseconds, not minutes.
const readBudget = 200000

// newSlotReader returns a reader for one snapshot: Read copies a slot between two equal, even
// reads of its first word, false when no consistent copy was possible within readTries (and the
// remaining budget; every slot gets two tries).
func newSlotReader() *seqlock.Reader { return &seqlock.Reader{Tries: readTries, Budget: readBudget} }
