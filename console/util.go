package console

import (
	"bytes"
	"io"

	"go.uber.org/zap"
)

func zapError(err error) zap.Field    { return zap.Error(err) }
func zapString(k, v string) zap.Field { return zap.String(k, v) }
func bytesReader(b []byte) io.Reader  { return bytes.NewReader(b) }
