package main_test

import (
	"testing"

	"msgx/internal/event"
	"msgx/internal/handler"
	"msgx/internal/store"
)

// eventRow is an event of one target as a test reads it from MSG_EVENT.
type eventRow struct {
	id, msg           int64
	target, kind, key string
	payload           string
}

// targetEvents reads every event of MSG_EVENT as the targets take them, in EVENT_ID order: a
// shared row (a flight change stored once) is each of the four targets' the handlers emit to
// (in handler.Targets order), rendered for it, unless the target has a row of its own for it (a
// failure, a replay: a copy of the shared row), which stands for it; any other row is its
// target's, rendered when it holds a change.
func targetEvents(t *testing.T, db *store.DB) []eventRow {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT EVENT_ID, CMINMSGS_ID, TARGET, KIND, COALESCE(FLIGHT_KEY, ''), PAYLOAD FROM MSG_EVENT ORDER BY EVENT_ID, TARGET`)
	if err != nil {
		t.Fatal(err)
	}
	var stored []eventRow
	type key struct {
		id     int64
		target string
	}
	own := map[key]bool{}
	for rows.Next() {
		var r eventRow
		if err := rows.Scan(&r.id, &r.msg, &r.target, &r.kind, &r.key, &r.payload); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, r)
		own[key{r.id, r.target}] = r.target != event.Shared
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	render := func(r eventRow, target string) eventRow {
		kind, p, err := event.Stored(target, r.kind, []byte(r.payload))
		if err != nil {
			t.Fatalf("event %d for %s: %v", r.id, target, err)
		}
		r.target, r.kind, r.payload = target, kind, string(p)
		return r
	}
	var out []eventRow
	for _, r := range stored {
		if r.target != event.Shared {
			out = append(out, render(r, r.target))
			continue
		}
		for _, tg := range handler.Targets {
			if !own[key{r.id, tg}] {
				out = append(out, render(r, tg))
			}
		}
	}
	return out
}
