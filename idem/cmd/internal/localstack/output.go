package localstack

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// lineWriter writes whole lines to out, each with a prefix, and drops the
// emulator's START and END lines (its REPORT line says it all).
type lineWriter struct {
	mu     sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

var outputMu sync.Mutex // one line at a time across every function

func newLineWriter(out io.Writer, prefix string) *lineWriter {
	return &lineWriter{out: out, prefix: prefix}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// Flush writes what is left of a last line without a newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	s := strings.TrimRight(string(line), "\r")
	if strings.HasPrefix(s, "START RequestId: ") || strings.HasPrefix(s, "END RequestId: ") {
		return
	}
	outputMu.Lock()
	fmt.Fprintf(w.out, "%s%s\n", w.prefix, s)
	outputMu.Unlock()
}
