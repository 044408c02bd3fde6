package stats

// The capture word: a header word that goxio capture writes and the library's taps load
// (offload/capture). The library only clears it (acknowledging a detach); the tool sets it to
// the generation of a capture segment it created for the process, or that generation with the
// detach bit.

// CaptureWord is the process's capture word, for offload/capture.Init.
func (w *Writer) CaptureWord() *uint64 {
	if w == nil {
		return nil
	}
	return &w.hdr[hCapture]
}

// CaptureWord is the segment's capture word, for the capture tool; it needs a writable mapping.
func (s *Segment) CaptureWord() (*uint64, error) {
	if !s.writable || !s.mapped {
		return nil, ErrReadOnly
	}
	return &s.hdr[hCapture], nil
}
