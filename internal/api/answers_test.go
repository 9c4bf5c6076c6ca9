package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
)

// nasty is an error text as a failing webhook forms it, with a secret in its query, a URL's
// password and a DSN's, quotes, backslashes and a second line: the worst a last error carries.
const nasty = `POST http://127.0.0.1:1/hook?key=s3cr3t: Post "http://127.0.0.1:1/hook?key=s3cr3t": dial tcp 127.0.0.1:1: connect: connection refused "quoted" \ back\slash` +
	"\n" + `then https://ops:s3cr3t@hooks.example/x?token=s3cr3t&a=1 and msgx:s3cr3t@tcp(db:3306)/aodb`

// failing is a database that answers the health and count reads with a nasty error.
type failing struct{ storetest.APIStore }

func (failing) Ping(context.Context) error { return store.Unavailable(errors.New(nasty)) }
func (failing) LeaseHolder(context.Context, string) (string, time.Time, error) {
	return "", time.Time{}, errors.New(nasty)
}
func (failing) CountByState(context.Context) (map[pipeline.ProcStatus]int, error) {
	return nil, store.Unavailable(errors.New(nasty))
}

// Every answer of the ops API is valid JSON and shows no secret, however an error that
// reached it quotes a URL: written by this msgx (masked as it is recorded) or by an older one
// (in clear in the row), a pump section that fails, a database that answers with one.
func TestEveryAnswerIsValidJSONWithoutSecrets(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, now := context.Background(), time.Now()
		f := newFixture(t, db, nil, api.InboxRule{})
		// This msgx records the errors (masked as values on the way to the row).
		ids, err := db.Intake.InsertMessages(ctx, []string{"<failed/>", "<old/>"}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 2, LastError: nasty,
			NextAttemptAt: now.Add(time.Hour), FirstFailedAt: now}, now); err != nil {
			t.Fatal(err)
		}
		if err := db.Operations.AddHistory(ctx, []int64{ids[0]}, store.Action{State: pipeline.Failed, Detail: nasty, Actor: "ops"}, now); err != nil {
			t.Fatal(err)
		}
		if err := db.Operations.AddAudit(ctx, store.AuditEntry{At: now, Actor: "ops", Role: "operator", Action: "x", Subject: "y", Detail: nasty}); err != nil {
			t.Fatal(err)
		}
		if err := db.Operations.SetPause(ctx, store.TargetPause("KAFKA_FLOP"), "ops", nasty, now); err != nil {
			t.Fatal(err)
		}
		job, err := db.JobQueue.EnqueueJob(ctx, "ARCHIVE", "", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.JobQueue.FinishJob(ctx, job.ID, store.JobOutcome{State: store.JobFailed, Attempts: 1, Next: now.Add(time.Hour), FirstFailed: now, Result: nasty, LastErr: nasty}, now); err != nil {
			t.Fatal(err)
		}
		// An older msgx wrote these rows with the secrets in clear.
		for _, q := range []string{
			`UPDATE PROC_STATE SET STATE = 'DEAD', ERROR_CLASS = 'INFRA', ATTEMPTS = 3, LAST_ERROR = ? WHERE CMINMSGS_ID = ?`,
			`UPDATE MSG_EVENT SET ERROR_CLASS = 'INFRA', ATTEMPTS = 4, FIRST_FAILED_AT = '2026-12-01 00:00:00.000000', LAST_ERROR = ? WHERE EVENT_ID = ?`,
		} {
			id := ids[1]
			if strings.Contains(q, "MSG_EVENT") {
				id = f.ev
			}
			if _, err := db.SQL.ExecContext(ctx, q, nasty, id); err != nil {
				t.Fatal(err)
			}
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		view := config.Default()
		view.Database.DSN = "msgx:s3cr3t@tcp(db:3306)/aodb"
		view.Targets = map[string]target.Config{"WEBHOOK_OPS": {Sink: "webhook", URL: "http://127.0.0.1:1/hook?key=s3cr3t", Secret: "s3cr3t"}}
		view.History.Elasticsearch.URL = "https://es:s3cr3t@es:9200"
		view.History.Elasticsearch.Password = "s3cr3t"
		view.Redis.Password = "s3cr3t"
		view.Eureka.ServiceURL = "http://eu:s3cr3t@eureka:8761/eureka"
		extra := map[string]func(context.Context) (any, error){
			"targets": dispatch.StatusSection(db.Outbox, pipeline.SystemClock{}, nil),
			"broken":  func(context.Context) (any, error) { return nil, errors.New(nasty) },
		}
		up := api.New(api.Deps{DB: storetest.API(db), Clock: pipeline.SystemClock{}, Log: quiet, PumpRunning: true, ConfigView: view.Redacted, StatusExtra: extra}).Handler()
		down := api.New(api.Deps{DB: failing{storetest.API(db)}, Clock: pipeline.SystemClock{}, Log: quiet, PumpRunning: true}).Handler()
		for _, c := range []struct {
			h                  string // up or down
			method, path, body string
			want               int
			shows              string // what the answer must still say (the masked error)
		}{
			{"up", "GET", "/api/v1/status", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/messages", "", 200, `\"quoted\" \\ back\\slash\n`},
			{"up", "GET", "/api/v1/messages?state=DEAD", "", 200, "hooks.example/xxxxx"},
			{"up", "GET", fmt.Sprintf("/api/v1/messages/%d", ids[0]), "", 200, "ops:xxxxx@hooks.example"},
			{"up", "GET", fmt.Sprintf("/api/v1/messages/%d", ids[1]), "", 200, "msgx:xxxxx@tcp(db:3306)"},
			{"up", "GET", fmt.Sprintf("/api/v1/messages/%d/history", ids[0]), "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/events", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/events?state=PENDING&target=KAFKA_FLOP", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/jobs", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/audit", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/pauses", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/config", "", 200, "127.0.0.1:1/xxxxx"},
			{"up", "GET", "/api/v1/me", "", 200, ""},
			{"up", "GET", "/healthz", "", 200, ""},
			{"up", "GET", "/readyz", "", 503, ""},
			{"up", "POST", "/api/v1/replay", `{"classes":["INFRA"],"dry_run":true}`, 200, ""},
			{"up", "POST", "/api/v1/events/replay", `{"target":"KAFKA_FLOP","dry_run":true}`, 200, ""},
			{"up", "POST", fmt.Sprintf("/api/v1/messages/%d/park", ids[0]), `{"reason":"see \"http://h/x?key=s3cr3t\" \\ now"}`, 200, ""},
			{"up", "GET", fmt.Sprintf("/api/v1/messages/%d/history", ids[0]), "", 200, `see \"http://h/xxxxx\" \\ now`},
			{"up", "GET", "/api/v1/nowhere%22%5C?key=s3cr3t", "", 404, ""},
			{"up", "GET", "/api/v1/messages/x%22y", "", 400, ""},
			{"down", "GET", "/healthz", "", 503, "127.0.0.1:1/xxxxx"},
			{"down", "GET", "/readyz", "", 503, "127.0.0.1:1/xxxxx"},
			{"down", "GET", "/api/v1/status", "", 503, `\"quoted\" \\ back\\slash\n`},
		} {
			h := up
			if c.h == "down" {
				h = down
			}
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r := httptest.NewRequest(c.method, c.path, body)
			r.RemoteAddr, r.Host = "127.0.0.1:1", "127.0.0.1:8080"
			if c.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Body.String()
			what := c.h + " " + c.method + " " + c.path
			if w.Code != c.want {
				t.Errorf("%s: %d, want %d: %s", what, w.Code, c.want, got)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Errorf("%s: the answer is not valid JSON:\n%s", what, got)
			}
			if strings.Contains(got, "s3cr3t") {
				t.Errorf("%s shows the secret:\n%s", what, got)
			}
			if !strings.Contains(got, c.shows) {
				t.Errorf("%s does not show %s:\n%s", what, c.shows, got)
			}
		}
	})
}
