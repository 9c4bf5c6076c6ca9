package storetest

// The contract of data requests (COUTMSGS, REQ_TRACK, the SEQN counter, the RESP match) and
// of shadow mode (nothing written into a legacy table). Run by Contract on every dialect.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Requests made at the same time (two API nodes, two operators) each get a SEQN of their own,
// and none fails for the counter.
func concurrentRequestsGetDistinctSEQNs(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	const n = 12
	errs := make(chan error, n)
	seqns := make(chan string, n)
	for range n {
		go func() {
			r, err := db.RequestTracker.CreateRequest(ctx, refRequest("AIRL"), xmlOf(refRequest("AIRL")), now)
			if err != nil {
				errs <- err
				return
			}
			seqns <- r.SEQN
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("a concurrent request failed: %v", err)
		}
	}
	close(seqns)
	seen := map[string]bool{}
	for s := range seqns {
		if seen[s] {
			t.Fatalf("SEQN %s given twice", s)
		}
		seen[s] = true
	}
	if len(seen) != n || !seen["000001"] || !seen[fmt.Sprintf("%06d", n)] {
		t.Fatalf("SEQNs %v, want 000001 to %06d", seen, n)
	}
}

// LegacyCOUTMSGS is the legacy outbound table as docs/sis-format.md §4.2 gives it, the way a legacy
// database has it before msgx first migrates: no defaults on the flags (the legacy writes
// them), utf8mb3 text. A MySQL CREATE TABLE.
const LegacyCOUTMSGS = `CREATE TABLE COUTMSGS (
  COUTMSGS_ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  COUTMSGS_CLOB_MSG MEDIUMTEXT,
  COUTMSGS_DATE_INSERTED DATETIME NOT NULL,
  COUTMSGS_DATE_SENT DATETIME,
  ROUTINGID VARCHAR(23) NOT NULL,
  COUTMSGS_TRUEFALS_GROUP TINYINT,
  COUTMSGS_NO_MESSAGES TINYINT,
  COUTMSGS_GROUP_ORDER TINYINT,
  COUTMSGS_GROUP_ID SMALLINT,
  COUTMSGS_FINAL_GROUP_IND TINYINT,
  COUTMSGS_ACK_REQD TINYINT,
  COUTMSGS_ACK_RESEND_TIMES TINYINT,
  COUTMSGS_ACK_DATE_RECV DATETIME,
  COUTMSGS_ENCRYPT TINYINT,
  COUTMSGS_ERROR TINYINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COMMENT='legacy outbound'`

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

func refRequest(typ string) store.NewRequest {
	return store.NewRequest{Type: store.ReqReference, STYP: typ, AnswerType: typ, Routing: store.RoutingReference}
}

func schedRequest(from, to string) store.NewRequest {
	return store.NewRequest{Type: store.ReqSchedule, STYP: "NONE", STDB: from, STDE: to, AnswerType: "SCHD", Routing: store.RoutingSchedule}
}

func xmlOf(r store.NewRequest) store.BuildXML {
	return func(seqn string) (string, error) {
		return fmt.Sprintf("<MSG><META><SNDR>VIEW</SNDR><SEQN>%s</SEQN><TYPE>%s</TYPE><STYP>%s</STYP></META></MSG>", seqn, r.Type, r.STYP), nil
	}
}

func create(t *testing.T, db *store.DB, r store.NewRequest, now time.Time) *store.Request {
	t.Helper()
	got, err := db.RequestTracker.CreateRequest(context.Background(), r, xmlOf(r), now)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func count(t *testing.T, db *store.DB, q string) int {
	t.Helper()
	var n int
	if err := db.SQLDB().QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// A request is one COUTMSGS row (the XML, its ROUTINGID, the insert time in the legacy zone,
// every flag 0, not sent) and one REGISTERED REQ_TRACK row with its SEQN, waiting for the
// gateway since now and with no deadline until the gateway sends it.
func requestIsQueuedInCOUTMSGSAndTracked(t *testing.T, db *store.DB) {
	ctx := context.Background()
	db.Intake.SetLegacy(store.LegacyOptions{Location: shanghai})
	now := time.Date(2026, 12, 3, 1, 30, 15, 0, time.UTC)
	a := create(t, db, refRequest("AIRL"), now)
	b := create(t, db, schedRequest("03DEC26", "05DEC262359"), now.Add(time.Second))
	if a.State != store.ReqRegistered || a.SEQN != "000001" || a.Type != "RQRD" || a.STYP != "AIRL" || a.AnswerType != "AIRL" ||
		a.Resends != 0 || a.SentAt != nil || a.FinishedAt != nil || a.AnswerID != nil || a.DeadlineAt != nil || a.QueuedAt == nil || !a.QueuedAt.Equal(now) ||
		!a.CreatedAt.Equal(now) {
		t.Fatalf("reference request: %+v", a)
	}
	if b.SEQN != "000002" || b.STYP != "NONE" || b.STDB != "03DEC26" || b.STDE != "05DEC262359" || b.AnswerType != "SCHD" || b.CoutmsgsID == a.CoutmsgsID {
		t.Fatalf("schedule request: %+v", b)
	}
	for _, c := range []struct {
		r       *store.Request
		routing string
	}{{a, "VIEWRQRD"}, {b, "VIEWRQFD"}} {
		o, err := db.RequestTracker.GetOutbound(ctx, c.r.CoutmsgsID)
		if err != nil || o == nil {
			t.Fatalf("COUTMSGS %d: %v %v", c.r.CoutmsgsID, o, err)
		}
		if o.Routing != c.routing || !strings.Contains(o.XML, "<SEQN>"+c.r.SEQN+"</SEQN>") || o.Sent != nil {
			t.Fatalf("COUTMSGS row of request %d: %+v", c.r.ID, o)
		}
		if o.Inserted == nil || !o.Inserted.Equal(c.r.CreatedAt) {
			t.Fatalf("COUTMSGS_DATE_INSERTED read back %v, want %v (local time in legacy.timezone)", o.Inserted, c.r.CreatedAt)
		}
		for i, f := range o.Flags {
			if !f.Valid || f.Int64 != 0 {
				t.Fatalf("flag %d of COUTMSGS %d: %+v, want 0", i, o.ID, f)
			}
		}
	}
	// The legacy zone: the insert time is airport local time.
	var raw string
	if err := db.SQLDB().QueryRow(`SELECT CAST(COUTMSGS_DATE_INSERTED AS CHAR) FROM COUTMSGS WHERE COUTMSGS_ID = ?`, a.CoutmsgsID).Scan(&raw); err != nil || raw != "2026-12-03 09:30:15" {
		t.Fatalf("COUTMSGS_DATE_INSERTED %q %v, want the local 2026-12-03 09:30:15", raw, err)
	}
	list, err := db.RequestTracker.ListRequests(ctx, store.RequestFilter{})
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list: %v %v", list, err)
	}
	if list, err := db.RequestTracker.ListRequests(ctx, store.RequestFilter{State: store.ReqDone}); err != nil || len(list) != 0 {
		t.Fatalf("list DONE: %v %v", list, err)
	}
	if got, err := db.RequestTracker.GetRequest(ctx, a.ID+100); got != nil || err != nil {
		t.Fatalf("an unknown request: %v %v", got, err)
	}
}

// The SEQN is six digits and cycles as the legacy's counter did: …, 999999, 000000, 000001.
func requestSEQNCyclesAfter999999(t *testing.T, db *store.DB) {
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	create(t, db, refRequest("AIRL"), now)
	Exec(t, db, `UPDATE MSGX_COUNTER SET VALUE = 999998 WHERE NAME = 'request.seqn'`)
	var got []string
	for range 3 {
		got = append(got, create(t, db, refRequest("CITY"), now).SEQN)
	}
	if strings.Join(got, " ") != "999999 000000 000001" {
		t.Fatalf("SEQNs past the top: %v, want 999999 000000 000001", got)
	}
}

// A value REQ_TRACK cannot hold whole (a TYPE over its 8 characters, CJK or not) is refused
// before anything is written; a request whose XML cannot be built leaves nothing either, not
// even a used SEQN.
func requestTooLongOrUnbuildableWritesNothing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	create(t, db, refRequest("ABCDEFGH"), now) // 8: the most the column holds
	for _, typ := range []string{"ABCDEFGHI", "机场机场机场机场机"} {
		r := refRequest(typ)
		if _, err := db.RequestTracker.CreateRequest(ctx, r, xmlOf(r), now); !errors.Is(err, store.ErrBadRequest) {
			t.Fatalf("TYPE %q: %v, want ErrBadRequest", typ, err)
		}
	}
	long := schedRequest(strings.Repeat("1", 33), "05DEC26")
	if _, err := db.RequestTracker.CreateRequest(ctx, long, xmlOf(long), now); !errors.Is(err, store.ErrBadRequest) {
		t.Fatalf("a 33-character STDB: %v, want ErrBadRequest", err)
	}
	boom := errors.New("cannot build")
	if _, err := db.RequestTracker.CreateRequest(ctx, refRequest("CITY"), func(string) (string, error) { return "", boom }, now); !errors.Is(err, boom) {
		t.Fatalf("a failing build: %v", err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM COUTMSGS`); n != 1 {
		t.Fatalf("%d COUTMSGS rows, want the one valid request's", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM REQ_TRACK`); n != 1 {
		t.Fatalf("%d REQ_TRACK rows, want 1", n)
	}
	if r := create(t, db, refRequest("CITY"), now); r.SEQN != "000002" {
		t.Fatalf("SEQN after refused requests: %s, want 000002", r.SEQN)
	}
}

// REGISTERED → SENT once the gateway set COUTMSGS_DATE_SENT (its local time read back in
// UTC), with the deadline the timeout after the gateway's send, not after msgx's insert; a
// request the gateway has not sent is never overdue, re-sent or expired, and counts as waiting
// for the gateway; overdue → re-sent as a new COUTMSGS row with the next SEQN, waiting again;
// a write from a stale read is refused and leaves no COUTMSGS row; EXPIRED.
func requestSentResentAndExpired(t *testing.T, db *store.DB) {
	ctx := context.Background()
	db.Intake.SetLegacy(store.LegacyOptions{Location: shanghai})
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	const timeout = 15 * time.Second
	r := create(t, db, refRequest("AIRL"), now)
	other := create(t, db, refRequest("CITY"), now.Add(time.Second))
	if n, err := db.RequestTracker.MarkSent(ctx, timeout, now); err != nil || n != 0 {
		t.Fatalf("nothing sent yet: %d %v", n, err)
	}
	if n, oldest, err := db.RequestTracker.WaitingForGateway(ctx); err != nil || n != 2 || oldest == nil || !oldest.Equal(now) {
		t.Fatalf("waiting for the gateway: %d since %v (%v), want 2 since %v", n, oldest, err, now)
	}
	Exec(t, db, fmt.Sprintf(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = '2026-12-03 09:00:07' WHERE COUTMSGS_ID = %d`, r.CoutmsgsID))
	if n, err := db.RequestTracker.MarkSent(ctx, timeout, now.Add(10*time.Second)); err != nil || n != 1 {
		t.Fatalf("mark sent: %d %v", n, err)
	}
	sentAt := now.Add(7 * time.Second)
	got, _ := db.RequestTracker.GetRequest(ctx, r.ID)
	if got.State != store.ReqSent || got.SentAt == nil || !got.SentAt.Equal(sentAt) || got.DeadlineAt == nil || !got.DeadlineAt.Equal(sentAt.Add(timeout)) || got.QueuedAt != nil {
		t.Fatalf("sent request: %+v (sent_at %v, deadline %v, want %v and %v)", got, got.SentAt, got.DeadlineAt, sentAt, sentAt.Add(timeout))
	}
	if n, oldest, err := db.RequestTracker.WaitingForGateway(ctx); err != nil || n != 1 || oldest == nil || !oldest.Equal(now.Add(time.Second)) {
		t.Fatalf("waiting for the gateway: %d since %v (%v), want CITY's", n, oldest, err)
	}
	if due, err := db.RequestTracker.Overdue(ctx, sentAt.Add(timeout-time.Millisecond)); err != nil || len(due) != 0 {
		t.Fatalf("overdue before the deadline: %v %v", due, err)
	}
	due, err := db.RequestTracker.Overdue(ctx, sentAt.Add(timeout))
	if err != nil || len(due) != 1 || due[0].ID != r.ID {
		t.Fatalf("overdue at the deadline: %v %v, want only the sent request", due, err)
	}
	if due, err := db.RequestTracker.Overdue(ctx, now.Add(24*time.Hour)); err != nil || len(due) != 1 {
		t.Fatalf("a day later the unsent request is still not overdue: %v %v", due, err)
	}
	// The unsent request, as read, cannot be re-sent or expired.
	unsent, _ := db.RequestTracker.GetRequest(ctx, other.ID)
	resendAndExpiryRefused(t, db, unsent, xmlOf(refRequest("CITY")), now.Add(time.Hour),
		"re-sending a request the gateway has not sent", "expiring a request the gateway has not sent")
	later := sentAt.Add(timeout)
	again, err := db.RequestTracker.Resend(ctx, due[0], xmlOf(refRequest("AIRL")), later)
	if err != nil {
		t.Fatal(err)
	}
	if again.State != store.ReqRegistered || again.Resends != 1 || again.SEQN != "000003" || again.CoutmsgsID == r.CoutmsgsID ||
		again.SentAt != nil || again.DeadlineAt != nil || again.QueuedAt == nil || !again.QueuedAt.Equal(later) {
		t.Fatalf("re-sent: %+v", again)
	}
	if o, err := db.RequestTracker.GetOutbound(ctx, again.CoutmsgsID); err != nil || o == nil || o.Routing != "VIEWRQRD" || !strings.Contains(o.XML, "000003") || o.Sent != nil {
		t.Fatalf("the re-send's COUTMSGS row: %+v %v", o, err)
	}
	// The same re-send again, from the same (now stale) read: refused, no COUTMSGS row left.
	resendAndExpiryRefused(t, db, due[0], xmlOf(refRequest("AIRL")), later, "a stale re-send", "a stale expiry")
	// The gateway sends the re-send and CITY; CITY's deadline passes and it expires.
	Exec(t, db, `UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = '2026-12-03 09:01:00' WHERE COUTMSGS_DATE_SENT IS NULL`)
	if n, err := db.RequestTracker.MarkSent(ctx, timeout, later); err != nil || n != 2 {
		t.Fatalf("mark the re-send and CITY sent: %d %v", n, err)
	}
	end := now.Add(time.Minute + timeout)
	due, err = db.RequestTracker.Overdue(ctx, end)
	if err != nil || len(due) != 2 || due[0].ID != r.ID || due[1].ID != other.ID {
		t.Fatalf("overdue after both were sent: %v %v", due, err)
	}
	if err := db.RequestTracker.Expire(ctx, due[1], end); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.RequestTracker.GetRequest(ctx, other.ID); got.State != store.ReqExpired || got.FinishedAt == nil || !got.FinishedAt.Equal(end) {
		t.Fatalf("expired: %+v", got)
	}
	if due, _ := db.RequestTracker.Overdue(ctx, end.Add(time.Hour)); len(due) != 1 || due[0].ID != r.ID {
		t.Fatalf("an expired request is not overdue any more: %v", due)
	}
	if n, oldest, err := db.RequestTracker.WaitingForGateway(ctx); err != nil || n != 0 || oldest != nil {
		t.Fatalf("waiting for the gateway at the end: %d since %v (%v), want none", n, oldest, err)
	}
}

// resendAndExpiryRefused checks that r, as read, can neither be re-sent (with xml) nor
// expired at at (ErrChanged; resend and expire say which case failed), and that the refused
// re-send left no COUTMSGS row.
func resendAndExpiryRefused(t *testing.T, db *store.DB, r *store.Request, xml store.BuildXML, at time.Time, resend, expire string) {
	t.Helper()
	ctx := context.Background()
	rows := count(t, db, `SELECT COUNT(*) FROM COUTMSGS`)
	if _, err := db.RequestTracker.Resend(ctx, r, xml, at); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("%s: %v, want ErrChanged", resend, err)
	}
	if err := db.RequestTracker.Expire(ctx, r, at); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("%s: %v, want ErrChanged", expire, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM COUTMSGS`); n != rows {
		t.Fatalf("a refused re-send left a COUTMSGS row: %d, want %d", n, rows)
	}
}

// A RESP of the requested TYPE (SCHD for a schedule request) answers an open request in its
// own success transaction: the one whose SEQN it echoes, else the oldest. A DNLD, another
// TYPE, or a RESP that reached msgx before the request was made answers nothing; a rolled-back
// batch leaves the request open.
func respAnswersItsRequestInItsOwnTransaction(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	early, err := db.Intake.InsertMessages(ctx, []string{"<early/>"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	a1 := create(t, db, refRequest("AIRL"), t1)
	a2 := create(t, db, refRequest("AIRL"), t1)
	c1 := create(t, db, refRequest("CITY"), t1)
	s1 := create(t, db, schedRequest("03DEC26", "04DEC26"), t1)
	t2 := t1.Add(time.Minute)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<dnld/>", "<other/>", "<echo/>", "<plain/>", "<schd/>", "<rolled-back/>"}, t2)
	if err != nil {
		t.Fatal(err)
	}
	succeed := func(id int64, typ, styp, seqn string) {
		t.Helper()
		s := store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: typ + "-" + styp, Identity: fmt.Sprintf("AODB|%s|%s|%s|%d", typ, styp, seqn, id),
			Meta: store.Backfill{SNDR: "AODB", TYPE: typ, STYP: styp, SEQN: seqn, DTTM: t2}}
		if _, _, err := db.Processor.Succeed(ctx, id, s, nil, t2); err != nil {
			t.Fatal(err)
		}
	}
	state := func(r *store.Request) *store.Request {
		t.Helper()
		got, err := db.RequestTracker.GetRequest(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	succeed(early[0], "AIRL", "RESP", "7")   // before any request: answers none
	succeed(ids[0], "AIRL", "DNLD", a2.SEQN) // not a RESP
	succeed(ids[1], "ABDG", "RESP", a1.SEQN) // no request for ABDG
	succeed(ids[2], "AIRL", "RESP", "2")     // echoes a2's SEQN (000002) unpadded
	succeed(ids[3], "AIRL", "RESP", "1243")  // echoes nothing: the oldest open AIRL request
	succeed(ids[4], "SCHD", "RESP", "")      // answers the schedule request
	for _, c := range []struct {
		r      *store.Request
		answer int64
	}{{a1, ids[3]}, {a2, ids[2]}, {c1, 0}, {s1, ids[4]}} {
		got := state(c.r)
		switch {
		case c.answer == 0 && (got.State != store.ReqRegistered || got.AnswerID != nil):
			t.Fatalf("request %d (%s) answered: %+v", got.ID, got.STYP, got)
		case c.answer != 0 && (got.State != store.ReqDone || got.AnswerID == nil || *got.AnswerID != c.answer || got.FinishedAt == nil):
			t.Fatalf("request %d (%s): %+v, want DONE answered by %d", got.ID, got.STYP, got, c.answer)
		}
		if c.answer != 0 {
			m, err := db.Operations.GetMessage(ctx, c.answer)
			if err != nil || m.AnsweredRequest == nil || *m.AnsweredRequest != c.r.ID {
				t.Fatalf("message %d names request %v, want %d (%v)", c.answer, m.AnsweredRequest, c.r.ID, err)
			}
		}
	}
	for _, id := range []int64{early[0], ids[0], ids[1]} {
		if m, _ := db.Operations.GetMessage(ctx, id); m.AnsweredRequest != nil {
			t.Fatalf("message %d names request %d", id, *m.AnsweredRequest)
		}
	}
	respInABatch(t, db, ids[5], c1, t2, state)
	if list, err := db.RequestTracker.ListRequests(ctx, store.RequestFilter{AfterID: a1.ID, Limit: 2}); err != nil || len(list) != 2 || list[0].ID != a2.ID || list[1].ID != c1.ID {
		t.Fatalf("a page of requests: %v %v", list, err)
	}
	if list, err := db.RequestTracker.ListRequests(ctx, store.RequestFilter{State: store.ReqDone}); err != nil || len(list) != 4 {
		t.Fatalf("the DONE requests: %v %v", list, err)
	}
	// A finished request takes no second answer.
	if n := count(t, db, `SELECT COUNT(*) FROM REQ_TRACK WHERE STATE = 'DONE'`); n != 4 {
		t.Fatalf("%d DONE requests, want 4", n)
	}
}

// legacyChecksum is a digest of every legacy row and column: CMINMSGS, CMINMSGS_HST and
// COUTMSGS, read as text.
func legacyChecksum(t *testing.T, db *store.DB) string {
	t.Helper()
	h := sha256.New()
	for _, table := range []string{"CMINMSGS", "CMINMSGS_HST", "COUTMSGS"} {
		rows, err := db.SQLDB().Query(`SELECT * FROM ` + table + ` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		fmt.Fprintf(h, "%s%v\n", table, cols)
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%v\n", vals)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// In shadow mode the legacy tables are read, never written: the rows above the watermark are
// adopted whatever the legacy marked, without marking them; processing back-fills nothing;
// the inbox, data requests and ARCHIVE refuse. The watermark is the highest id at the first
// start, and stays.
func shadowWritesNoLegacyTable(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	gateway := func(raw, processed string) int64 {
		t.Helper()
		var p any
		if processed != "" {
			p = processed
		}
		res, err := db.SQLDB().Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`,
			raw, "2026-12-03 09:00:00", p)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	before := gateway("<before/>", "")
	wm, err := db.Intake.ShadowWatermark(ctx, now)
	if err != nil || wm != before {
		t.Fatalf("watermark %d (%v), want the highest id %d", wm, err, before)
	}
	taken := gateway("<taken by the legacy/>", "2026-12-03 09:00:01")
	fresh := gateway("<not yet taken/>", "")
	if _, err := db.SQLDB().Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES ('<invalid/>', 'INVALID')`); err != nil {
		t.Fatal(err)
	}
	if again, err := db.Intake.ShadowWatermark(ctx, now); err != nil || again != wm {
		t.Fatalf("the watermark moved to %d (%v), want it kept at %d", again, err, wm)
	}
	db.Intake.SetShadow(wm)
	sum := legacyChecksum(t, db)
	if n, _, err := db.Intake.Backlog(ctx); err != nil || n != 2 {
		t.Fatalf("shadow backlog %d (%v), want the 2 VALID rows above the watermark", n, err)
	}
	msgs, _, _, err := db.Intake.Heads(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.Intake.AdoptLegacy(ctx, 0, msgs, now); err != nil || n != 2 {
		t.Fatalf("shadow adopted %d (%v), want 2", n, err)
	}
	for _, id := range []int64{taken, fresh} {
		m, err := db.Operations.GetMessage(ctx, id)
		if err != nil || m == nil || m.State != pipeline.Pending {
			t.Fatalf("row %d in shadow: %+v %v", id, m, err)
		}
	}
	if m, _ := db.Operations.GetMessage(ctx, before); m != nil {
		t.Fatalf("the row at the watermark was adopted: %+v", m)
	}
	if _, _, err := db.Processor.Succeed(ctx, taken, store.Success{TypeTag: "STTS-ADD", Identity: "AODB|STTS|ADD|1",
		Meta: store.Backfill{SNDR: "AODB", TYPE: "STTS", STYP: "ADD", SEQN: "1", DTTM: now}}, nil, now); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, fresh, store.Outcome{State: pipeline.Skipped, LastError: "x",
		Meta: &store.Backfill{SNDR: "AODB", TYPE: "STTS", STYP: "ADD", SEQN: "2", DTTM: now}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Intake.InsertMessages(ctx, []string{"<inbox/>"}, now); !errors.Is(err, store.ErrShadow) {
		t.Fatalf("the inbox in shadow: %v, want ErrShadow", err)
	}
	if _, err := db.RequestTracker.CreateRequest(ctx, refRequest("AIRL"), xmlOf(refRequest("AIRL")), now); !errors.Is(err, store.ErrShadow) {
		t.Fatalf("a data request in shadow: %v, want ErrShadow", err)
	}
	if n, err := db.Archiver.Archive(ctx, msgs, now.Add(72*time.Hour), now, nil); err != nil || n != 0 {
		t.Fatalf("ARCHIVE in shadow moved %d (%v)", n, err)
	}
	// Retention forgets msgx's own states, never the legacy's history rows, even for rows an
	// earlier non-shadow msgx archived.
	if _, err := db.SQLDB().ExecContext(ctx, `UPDATE PROC_STATE SET ARCHIVED_AT = ?`, store.T(now.Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Archiver.PurgeArchived(ctx, now, nil); err != nil {
		t.Fatalf("retention in shadow: %v", err)
	}
	if got := legacyChecksum(t, db); got != sum {
		t.Fatal("shadow mode changed a legacy row or column")
	}
}

// respInABatch checks that a RESP (message id, answering CITY request c1) matches its
// request under the message's savepoint in a batch: a batch rolled back (a crash before the
// commit) leaves the request open, a committed one answers it. state reads a request.
func respInABatch(t *testing.T, db *store.DB, id int64, c1 *store.Request, at time.Time, state func(*store.Request) *store.Request) {
	t.Helper()
	ctx := context.Background()
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Succeed(ctx, id, store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: "CITY-RESP", Identity: "AODB|CITY|RESP|9",
		Meta: store.Backfill{SNDR: "AODB", TYPE: "CITY", STYP: "RESP", SEQN: "9"}}, nil, at); err != nil {
		t.Fatal(err)
	}
	b.Rollback()
	if got := state(c1); got.State != store.ReqRegistered {
		t.Fatalf("a rolled-back RESP answered its request: %+v", got)
	}
	b, err = db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Succeed(ctx, id, store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: "CITY-RESP", Identity: "AODB|CITY|RESP|9",
		Meta: store.Backfill{SNDR: "AODB", TYPE: "CITY", STYP: "RESP", SEQN: "9"}}, nil, at); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(c1); got.State != store.ReqDone || got.AnswerID == nil || *got.AnswerID != id {
		t.Fatalf("the batch's RESP did not answer: %+v", got)
	}
}
