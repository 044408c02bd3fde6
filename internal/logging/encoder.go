package logging

import (
	"strconv"
	"sync/atomic"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"
)

type detailSetting struct{ n atomic.Int32 }

var bufferPool = buffer.NewPool()

// prefixEncoder prints VMA's line shape, "goxio INFO: message fields", with the thread id,
// process id and time in front as VMA_LOG_DETAILS asks.
type prefixEncoder struct {
	zapcore.Encoder
	details *detailSetting
}

func (e *prefixEncoder) Clone() zapcore.Encoder {
	return &prefixEncoder{Encoder: e.Encoder.Clone(), details: e.details}
}

func (e *prefixEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	body, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return nil, err
	}
	out := bufferPool.Get()
	switch d := e.details.n.Load(); {
	case d >= 3:
		out.AppendString(prefixTime().Format("15:04:05.000000"))
		out.AppendByte(' ')
		fallthrough
	case d == 2:
		out.AppendString("Pid:")
		out.AppendString(strconv.Itoa(unix.Getpid()))
		out.AppendByte(' ')
		fallthrough
	case d == 1:
		out.AppendString("Tid:")
		out.AppendString(strconv.Itoa(unix.Gettid()))
		out.AppendByte(' ')
	}
	out.AppendString("goxio ")
	out.AppendString(LevelName(ent.Level))
	out.AppendString(": ")
	out.AppendBytes(body.Bytes())
	body.Free()
	return out, nil
}
