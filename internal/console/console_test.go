package console

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// fakeStore holds messages by id; ListMessages pages them as the store does.
type fakeStore struct {
	msgs   []*store.Message // in id order
	raws   map[int64]string
	ranges int // ProcessedBetween calls
}

// ProcessedBetween returns the processing times in [from, to] as the store's index range
// does: only finished messages have one.
func (f *fakeStore) ProcessedBetween(_ context.Context, from, to time.Time) ([]time.Time, error) {
	f.ranges++
	out := []time.Time{}
	for _, m := range f.msgs {
		if m.ProcessedAt != nil && !m.ProcessedAt.Before(from) && !m.ProcessedAt.After(to) {
			out = append(out, *m.ProcessedAt)
		}
	}
	return out, nil
}

func (f *fakeStore) Raw(_ context.Context, id int64) (string, bool, error) {
	r, ok := f.raws[id]
	return r, ok, nil
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

var now = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// finished returns n messages from id on, each processed ago before now in state st.
func finished(id int64, n int, st pipeline.ProcStatus, ago time.Duration) []*store.Message {
	var out []*store.Message
	for i := range n {
		at := now.Add(-ago)
		out = append(out, &store.Message{ID: id + int64(i), State: st, ProcessedAt: &at})
	}
	return out
}

func TestThroughputCountsFinishedMessagesPerMinute(t *testing.T) {
	var msgs []*store.Message
	msgs = append(msgs, finished(1, 3, pipeline.Succeeded, 2*time.Hour)...)              // too old
	msgs = append(msgs, finished(4, 2, pipeline.Dead, 59*time.Minute+30*time.Second)...) // first minute
	msgs = append(msgs, finished(6, 4, pipeline.Skipped, 10*time.Second)...)             // last minute
	msgs = append(msgs, &store.Message{ID: 10, State: pipeline.Failed})                  // not finished: no processing time
	msgs = append(msgs, &store.Message{ID: 11, State: pipeline.Pending})
	tp, err := Throughput(context.Background(), &fakeStore{msgs: msgs}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.PerMinute) != 60 || tp.PerMinute[0] != 2 || tp.PerMinute[59] != 4 || tp.Total != 6 || tp.Partial {
		t.Fatalf("throughput %+v, want 2 in the first minute, 4 in the last, 6 in all, complete", tp)
	}
}

// Every message finished in the hour is counted, however many (it used to stop at the newest
// 5,000), in one read of the processing-time range.
func TestThroughputCountsTheWholeHour(t *testing.T) {
	busy := append(finished(1, 100, pipeline.Succeeded, 2*time.Hour), finished(101, 7000, pipeline.Succeeded, time.Minute)...)
	busy = append(busy, finished(7101, 300, pipeline.Dead, 30*time.Minute)...)
	db := &fakeStore{msgs: busy}
	tp, err := Throughput(context.Background(), db, now)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Total != 7300 || tp.Partial || tp.PerMinute[58] != 7000 || tp.PerMinute[29] != 300 || db.ranges != 1 {
		t.Fatalf("a busy hour: total %d partial %v minute 58 %d minute 29 %d reads %d; want 7300, complete, 7000, 300, 1 read",
			tp.Total, tp.Partial, tp.PerMinute[58], tp.PerMinute[29], db.ranges)
	}
}

func server(t *testing.T, db Store) *httptest.Server {
	mux := http.NewServeMux()
	Routes(db, fixedClock(now), sis.Options{})(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The page and its assets come from the binary, with a policy that allows only this origin's
// script and style (no inline script, no CDN).
func TestTheConsoleIsServedWithItsPolicy(t *testing.T) {
	srv := server(t, &fakeStore{})
	resp, body := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || !strings.Contains(body, `<script src="/console/app.js"`) {
		t.Fatalf("GET /: %d %.200s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET / headers %v", resp.Header)
	}
	for file, ctype := range map[string]string{"app.js": "javascript", "app.css": "text/css"} {
		resp, body := get(t, srv.URL+"/console/"+file)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), ctype) || len(body) < 100 {
			t.Fatalf("GET /console/%s: %d %s", file, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if resp, _ := get(t, srv.URL+"/console/nothing.js"); resp.StatusCode != 404 {
		t.Fatalf("an unknown asset: %d", resp.StatusCode)
	}
}

// Everything is self-contained and server data never becomes markup: no other origin is named,
// no inline script or handler, and the script never parses strings as HTML.
func TestAssetsAreSelfContainedAndWriteTextOnly(t *testing.T) {
	other := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?https?:`)
	markup := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`)
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(path)
		if err != nil {
			return err
		}
		if m := other.Find(b); m != nil {
			t.Errorf("%s loads from another origin: %q", path, m)
		}
		if strings.HasSuffix(path, ".js") {
			if m := markup.Find(b); m != nil {
				t.Errorf("%s builds markup from strings: %q", path, m)
			}
		}
		if strings.HasSuffix(path, ".html") && (regexp.MustCompile(`<script>|<script [^>]*>[^<]`).Match(b) || regexp.MustCompile(`\son[a-z]+=`).Match(b)) {
			t.Errorf("%s has inline script", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDecodedShowsTheMessageOrWhyItCannot(t *testing.T) {
	good := `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>20261201091600</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>
<RECS>1</RECS><STTS><STTC>机场</STTC><STTD>到达</STTD><ABNS>N</ABNS></STTS></MSG>`
	srv := server(t, &fakeStore{raws: map[int64]string{1: good, 2: "<MSG><META>"}})
	var d struct {
		Decoded map[string]any `json:"decoded"`
		Error   string         `json:"error"`
		Class   string         `json:"class"`
	}
	resp, body := get(t, srv.URL+"/api/v1/console/messages/1/decoded")
	if err := json.Unmarshal([]byte(body), &d); err != nil || resp.StatusCode != 200 || d.Error != "" || !strings.Contains(body, "机场") {
		t.Fatalf("decoded 1: %d %s", resp.StatusCode, body)
	}
	if meta, _ := d.Decoded["meta"].(map[string]any); meta["STYP"] != "ADD" {
		t.Fatalf("decoded 1 meta: %v", d.Decoded)
	}
	d.Decoded = nil
	resp, body = get(t, srv.URL+"/api/v1/console/messages/2/decoded")
	if err := json.Unmarshal([]byte(body), &d); err != nil || resp.StatusCode != 200 || d.Error == "" || d.Class != string(pipeline.Malformed) || d.Decoded != nil {
		t.Fatalf("decoded 2: %d %s", resp.StatusCode, body)
	}
	for path, code := range map[string]int{"3": 404, "x": 400} {
		if resp, body := get(t, srv.URL+"/api/v1/console/messages/"+path+"/decoded"); resp.StatusCode != code {
			t.Fatalf("decoded %s: %d %s, want %d", path, resp.StatusCode, body, code)
		}
	}
}
