package target

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"msgx/internal/pipeline"
)

func TestFileAppendsLinesAcrossReopen(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	recs := records("KAFKA_SCHD", 1, 5, "A", "B")
	recs[4].Value = []byte(`[{"flid":"A","é":"<&>"},{"flid":"B"}]`) // an array, bytes kept as they are

	s, err := Open(ctx, "KAFKA_SCHD", Config{Sink: SinkFile}, dataDir)
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

	s, err = Open(ctx, "KAFKA_SCHD", Config{Sink: SinkFile}, dataDir)
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
	s := mustOpen(t, "F", Config{Sink: SinkFile, Path: path})
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
