package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// fileSink appends one JSON line per record to a file and syncs it before Send returns.
type fileSink struct {
	name string
	path string

	mu  sync.Mutex
	f   *os.File // nil after Close
	buf bytes.Buffer
}

func openFile(_ context.Context, name string, c Config) (Sink, error) {
	dir := filepath.Dir(c.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("file target %s: %w", name, err)
	}
	_, statErr := os.Stat(c.Path)
	f, err := os.OpenFile(c.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file target %s: %w", name, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A new file: make its directory entry durable too.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("file target %s: %w", name, err)
		}
	}
	if err := cutTornTail(f, c.Path, name, loggerOf(c)); err != nil {
		f.Close()
		return nil, fmt.Errorf("file target %s: %w", name, err)
	}
	return &fileSink{name: name, path: c.Path, f: f}, nil
}

// tailChunk is how much of the file's end cutTornTail reads at a time.
const tailChunk = 64 << 10

// cutTornTail makes the file f end with a whole line. A process killed in the middle of an
// append (kill -9, power loss) can leave a partial last line; the next append would be glued
// onto it. If the file is not empty and does not end with '\n', it is cut back to just after
// its last '\n' (to empty when it has none) and synced; the cut bytes are logged. The events
// of that line were never marked SENT (a send is marked only after its fsync), so they are
// written again whole.
func cutTornTail(f *os.File, path, name string, log *slog.Logger) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s to check its last line: %w", path, err)
	}
	defer r.Close()
	buf := make([]byte, tailChunk)
	end := size // bytes [end, size) hold no '\n'
	for end > 0 {
		start := max(0, end-tailChunk)
		chunk := buf[:end-start]
		if _, err := r.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the end of %s: %w", path, err)
		}
		if end == size && chunk[len(chunk)-1] == '\n' {
			return nil // ends with a whole line
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("cut the torn last line of %s back to %d bytes: %w", path, end, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s after cutting its torn last line: %w", path, err)
	}
	log.Warn("file sink: cut a torn last line left by an interrupted write; its events are written again",
		"target", name, "path", path, "cut_bytes", size-end, "size", end)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Send appends Value + "\n" for each record, in one write, and fsyncs the file. A value that
// would not be one line (empty, or holding a line break) is REJECTED; the records before it
// are written. On a write or sync failure the file is cut back to its previous length, so a
// retry never leaves a half line or a line twice, and Send reports nothing written.
func (s *fileSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, closedErr(targetconf.SinkFile, s.name)
	}
	if err := ctx.Err(); err != nil {
		return 0, eventErr(targetconf.SinkFile, s.name, recs[0], err)
	}
	n, bad := len(recs), error(nil)
	s.buf.Reset()
	for i, r := range recs {
		if len(r.Value) == 0 || bytes.ContainsAny(r.Value, "\r\n") {
			n, bad = i, pipeline.Wrap(pipeline.Rejected, eventErr(targetconf.SinkFile, s.name, r,
				fmt.Errorf("value is not one line of JSON (%d bytes)", len(r.Value))))
			break
		}
		s.buf.Write(r.Value)
		s.buf.WriteByte('\n')
	}
	if n == 0 {
		return 0, bad
	}
	if err := s.write(); err != nil {
		return 0, eventErr(targetconf.SinkFile, s.name, recs[0], err)
	}
	return n, bad
}

// write appends s.buf and syncs, or cuts the file back to where it was.
func (s *fileSink) write() error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", s.path, err)
	}
	_, err = s.f.Write(s.buf.Bytes())
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("append to %s: %w", s.path, err)
	if terr := s.f.Truncate(st.Size()); terr != nil {
		return fmt.Errorf("%w; and cutting back to %d bytes failed: %v", err, st.Size(), terr)
	}
	return err
}

// Close closes the file.
func (s *fileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if err != nil {
		return fmt.Errorf("file target %s: close: %w", s.name, err)
	}
	return nil
}
