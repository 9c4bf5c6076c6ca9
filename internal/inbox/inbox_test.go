package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/inbox"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

func newServer(t *testing.T, db *store.DB) (*httptest.Server, *atomic.Int32) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	woken := &atomic.Int32{}
	in := inbox.New(db.Intake, pipeline.SystemClock{}, log, 1<<20, func() { woken.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go in.Run(ctx)
	ts := httptest.NewServer(in)
	t.Cleanup(ts.Close)
	return ts, woken
}

func TestInboxStoresRawAndPendingTogether(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ts, woken := newServer(t, db)
		body := "anything at all: the inbox never parses"
		resp, err := http.Post(ts.URL+"/cminmsgs/send", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "1" {
			t.Fatalf("answer %d %q, want 200 \"1\"", resp.StatusCode, b)
		}
		raw, ok, err := db.Processor.Raw(context.Background(), 1)
		if err != nil || !ok || raw != body {
			t.Fatalf("stored raw %q %v %v", raw, ok, err)
		}
		m, err := db.Operations.GetMessage(context.Background(), 1)
		if err != nil || m == nil || m.State != pipeline.Pending {
			t.Fatalf("state: %+v %v", m, err)
		}
		if woken.Load() != 1 {
			t.Fatalf("pump woken %d times, want 1", woken.Load())
		}
	})
}

func TestInboxAnswers503WhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ts, _ := newServer(t, db)
	db.Close()
	resp, err := http.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader("<MSG/>"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e client.ErrorBody
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || e.Code != "database_unavailable" {
		t.Fatalf("got %d %+v Retry-After=%q", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
}

func TestInboxMessageTheDatabaseRefusesIs413AndSparesItsBatch(t *testing.T) {
	t.Parallel()
	db := storetest.MySQL(t)
	var packet int
	if err := db.SQL.QueryRow(`SELECT @@max_allowed_packet`).Scan(&packet); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	in := inbox.New(db.Intake, pipeline.SystemClock{}, log, int64(packet)*2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go in.Run(ctx)
	ts := httptest.NewServer(in)
	defer ts.Close()

	big := strings.Repeat("x", packet+1024)
	var wg sync.WaitGroup
	codes := make([]int, 9)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := "<small/>"
			if i == 0 {
				body = big
			}
			resp, err := http.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	if codes[0] != 413 {
		t.Errorf("a message over max_allowed_packet: %d, want 413", codes[0])
	}
	for i, c := range codes[1:] {
		if c != 200 {
			t.Errorf("small message %d: %d, want 200", i+1, c)
		}
	}
}

// Bodies being read count against http.max-inflight-bytes: a post that would go over it is
// answered 503 with Retry-After and stores nothing; once the first is stored, posts go through.
func TestInboxBoundsTheBytesInFlight(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	in := inbox.New(db.Intake, pipeline.SystemClock{}, log, 1000, nil)
	in.MaxInflightBytes = 1000
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go in.Run(ctx)
	ts := httptest.NewServer(in)
	t.Cleanup(ts.Close)

	post := func(body io.Reader, length int64) (int, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/cminmsgs/send", body)
		req.Header.Set("Content-Type", "text/plain")
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After") + " " + string(b)
	}
	// A slow sender: 700 bytes declared, 10 sent, the rest held back.
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // a failure below ends the slow post, or ts.Close waits for it for ever
	first := make(chan int, 1)
	go func() { code, _ := post(pr, 700); first <- code }()
	pw.Write([]byte(strings.Repeat("a", 10)))
	// Declared length over what is left: refused before reading.
	deadline := time.Now().Add(5 * time.Second)
	var code int
	var rest string
	for time.Now().Before(deadline) {
		if code, rest = post(strings.NewReader(strings.Repeat("b", 400)), 400); code == 503 {
			break
		}
		time.Sleep(10 * time.Millisecond) // the first request may not have reached the inbox yet
	}
	if code != 503 || !strings.HasPrefix(rest, "1 ") || !strings.Contains(rest, "max-inflight-bytes") {
		t.Fatalf("over the bound: %d %q, want 503 with Retry-After", code, rest)
	}
	// Unknown length (chunked) is counted as it is read.
	if code, rest := post(io.MultiReader(strings.NewReader(strings.Repeat("c", 400))), -1); code != 503 {
		t.Fatalf("chunked over the bound: %d %q", code, rest)
	}
	pw.Write([]byte(strings.Repeat("a", 690)))
	pw.Close()
	if c := <-first; c != 200 {
		t.Fatalf("the first post: %d", c)
	}
	if code, rest := post(strings.NewReader(strings.Repeat("d", 400)), 400); code != 200 {
		t.Fatalf("after the first was stored: %d %q", code, rest)
	}
	counts, _ := db.Operations.CountByState(context.Background())
	if counts[pipeline.Pending] != 2 {
		t.Fatalf("stored %v, want the two accepted posts only", counts)
	}
}

// A legacy CMINMSGS whose text column cannot hold 4-byte characters (utf8mb3) refuses such a
// message for good: 422, not the 503 that would make the sender retry forever; the messages
// that shared its commit are stored.
func TestInboxMessageTheColumnCannotHoldIs422(t *testing.T) {
	t.Parallel()
	db := storetest.MySQL(t)
	storetest.Exec(t, db, `ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT CHARACTER SET utf8mb3 NOT NULL`)
	ts, _ := newServer(t, db)
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i, body := range []string{"<MSG>plain</MSG>", "<MSG>\U0001F6EB</MSG>", "<MSG>机场</MSG>"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			var e client.ErrorBody
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode == 422 && e.Code != "unstorable" {
				t.Errorf("422 with code %q", e.Code)
			}
		}()
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 422 || codes[2] != 200 {
		t.Fatalf("answers %v, want 200 422 200", codes)
	}
}

// A database that does not answer (here: another transaction holds the inbox's lock) does not
// hold a sender past http.inbox-deadline: the post is answered 503 database_timeout with
// Retry-After, not acknowledged, and counted; once the database answers again, posts are
// acknowledged at once (the writer was not left stuck behind the hung commit).
func TestInboxAnswers503AtTheDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var logged testkit.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		m := metrics.New(nil, "test", nil)
		in := inbox.New(db.Intake, pipeline.SystemClock{}, log, 1<<20, nil)
		in.Deadline = 500 * time.Millisecond
		in.Metrics = m
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go in.Run(ctx)
		ts := httptest.NewServer(in)
		t.Cleanup(ts.Close)

		hold, err := db.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.MySQL {
			if _, err := hold.Exec(`SELECT NAME FROM INBOX_LOCK WHERE NAME = 'inbox' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
		} else if _, err := hold.Exec(`DELETE FROM REF_DATA WHERE 1 = 0`); err != nil { // BEGIN IMMEDIATE: the write lock
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				began := time.Now()
				resp, err := http.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader(fmt.Sprintf("<MSG n='%d'/>", i)))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				took := time.Since(began)
				var e client.ErrorBody
				json.NewDecoder(resp.Body).Decode(&e)
				if resp.StatusCode != 503 || e.Code != "database_timeout" || resp.Header.Get("Retry-After") == "" ||
					!strings.Contains(e.Error, "http.inbox-deadline") {
					t.Errorf("post %d while the database hangs: %d %+v Retry-After=%q, want 503 database_timeout with Retry-After",
						i, resp.StatusCode, e, resp.Header.Get("Retry-After"))
				}
				if took > in.Deadline+time.Second {
					t.Errorf("post %d held %s, deadline %s", i, took, in.Deadline)
				}
			}()
		}
		wg.Wait()
		hold.Rollback()
		if got := testkit.Counter(t, m.Registry, "msgx_inbox_deadline_exceeded_total"); got != 3 {
			t.Errorf("msgx_inbox_deadline_exceeded_total = %v, want 3", got)
		}
		// One warning for the three 503s, not one per post: the rest are counted in a line
		// a minute later (ratelog).
		if n := strings.Count(logged.String(), "inbox post answered 503"); n != 1 {
			t.Errorf("%d warnings for 3 posts answered 503, want 1:\n%s", n, logged.String())
		}
		began := time.Now()
		resp, err := http.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader("<MSG after='thaw'/>"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || time.Since(began) > in.Deadline {
			t.Fatalf("post after the database answers again: %d after %s", resp.StatusCode, time.Since(began))
		}
	})
}
