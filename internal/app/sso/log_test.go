package sso_test

import (
	"bytes"
	"log/slog"
	"sync"
)

type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func slogTo(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&syncWriter{b: b}, nil))
}
