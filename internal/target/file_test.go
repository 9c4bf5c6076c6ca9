package target

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

func TestFileAppendsLinesAcrossReopen(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	recs := records("KAFKA_SCHD", 1, 5, "A", "B")
	recs[4].Value = []byte(`[{"flid":"A","é":"<&>"},{"flid":"B"}]`) // an array, bytes kept as they are

	s, err := Open(ctx, "KAFKA_SCHD", Config{Sink: targetconf.SinkFile}, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Send(ctx, recs[:3]); err != nil || n != 3 {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Send(ctx, recs[3:]); err == nil {
		t.Fatalf("Send after Close = %d, nil", n)
	}

	s, err = Open(ctx, "KAFKA_SCHD", Config{Sink: targetconf.SinkFile}, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Send(ctx, recs[3:]); err != nil || n != 2 {
		t.Fatalf("Send after reopen = %d, %v", n, err)
	}

	got, err := os.ReadFile(filepath.Join(dataDir, "outbox", "KAFKA_SCHD.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, r := range recs {
		want.Write(r.Value)
		want.WriteByte('\n')
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file holds\n%s\nwant\n%s", got, want.Bytes())
	}
}

func TestFileRejectsValueThatIsNotOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "er", "out.jsonl")
	s := mustOpen(t, "F", Config{Sink: targetconf.SinkFile, Path: path})
	recs := records("F", 1, 3)
	recs[1].Value = []byte("{\n}")
	n, err := s.Send(context.Background(), recs)
	if n != 1 || pipeline.ClassOf(err) != pipeline.Rejected {
		t.Fatalf("Send = %d, %v; want 1 and a REJECTED error", n, err)
	}
	got, _ := os.ReadFile(path)
	if want := string(recs[0].Value) + "\n"; string(got) != want {
		t.Errorf("file holds %q, want %q", got, want)
	}
}

// TestFileCutsTornTailAtOpen: a write cut short by a crash leaves a partial last line; the
// next open cuts it back to the last whole line (and says so), so what is appended after it
// starts a line of its own and every line of the file parses.
func TestFileCutsTornTailAtOpen(t *testing.T) {
	for _, tc := range []struct {
		name, whole, torn string
	}{
		{"after whole lines", `{"event_id":1}` + "\n" + `{"event_id":2}` + "\n", `{"event_id":3,"payl`},
		{"only a torn line", "", `{"event_id":1,"pay`},
		{"torn line longer than a read chunk", `{"event_id":1}` + "\n", `{"x":"` + strings.Repeat("é", 70<<10)},
		{"whole lines only", `{"event_id":1}` + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(path, []byte(tc.whole+tc.torn), 0o644); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logged, nil))
			s := mustOpen(t, "F", Config{Sink: targetconf.SinkFile, Path: path, Logger: log})
			recs := records("F", 10, 2)
			if n, err := s.Send(context.Background(), recs); err != nil || n != 2 {
				t.Fatalf("Send = %d, %v", n, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.whole + string(recs[0].Value) + "\n" + string(recs[1].Value) + "\n"
			if string(got) != want {
				t.Errorf("file holds %.200q…, want %.200q…", got, want)
			}
			for i, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("line %d does not parse: %.80q", i+1, line)
				}
			}
			cut := strings.Contains(logged.String(), "torn last line")
			if cut != (tc.torn != "") {
				t.Errorf("log %q: cut logged %v, want %v", logged.String(), cut, tc.torn != "")
			}
			if tc.torn != "" && !strings.Contains(logged.String(), fmt.Sprintf(`"cut_bytes":%d`, len(tc.torn))) {
				t.Errorf("log %q does not give cut_bytes %d", logged.String(), len(tc.torn))
			}
		})
	}
}
