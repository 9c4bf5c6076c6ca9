package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Open yields a fresh, migrated database of one dialect for one case of the contract.
type Open func(t *testing.T) *store.DB

// contractCase is one behaviour of the contract, run on a fresh database. It holds one table
// owner to what the packages using it rely on, and sets rows up through the others or the SQL
// handle where the owner cannot write them (a legacy gateway's row, a NULL column).
type contractCase struct {
	name string
	fn   func(t *testing.T, db *store.DB)
}

// Contract runs the store contract, every behaviour the packages using the store rely on, on
// fresh databases from open (one per case), as River's riverdrivertest runs against a driver:
// one suite per table owner of the store (a subtest named after it). Every dialect must pass
// it: SQLite, MySQL/MariaDB, and MySQL/MariaDB on the legacy CMINMSGS table (see Dialects). It
// holds the edge values: texts at and over each column's width, CJK and 4-byte text, NULL in
// each optional column, identity keys that differ only by case or trailing spaces, the
// largest legacy MEDIUMINT, the legacy column types.
func Contract(t *testing.T, open Open) {
	for _, s := range suites {
		t.Run(s.owner, func(t *testing.T) {
			for _, c := range s.cases {
				t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
			}
		})
	}
}

// suites are the contract's cases by the owner they hold to it (store.DB's fields; DB is the
// connection itself).
var suites = []struct {
	owner string
	cases []contractCase
}{
	// DB: the connection: migrations and the times written.
	{"DB", []contractCase{
		{"MigrateTwiceIsANoOp", migrateTwiceIsANoOp},
		{"TimesKeepMicrosecondsInUTC", timesKeepMicrosecondsInUTC},
	}},
	// Intake: CMINMSGS as the inbox writes it, adoption across id gaps, trace ids.
	{"Intake", []contractCase{
		{"InboxBatchesKeepTheirOrderAcrossChunks", inboxBatchesKeepTheirOrderAcrossChunks},
		{"TraceIDsAtAndOverTheirWidth", traceIDsAtAndOverTheirWidth},
		{"IDGapsNeverHoldTheInboxThePumpOrTheDispatcher", idGapsNeverHold},
		{"TraceIDIsStoredWithTheMessage", traceIDIsStoredWithTheMessage},
	}},
	// Processor: PROC_STATE as the pump writes it: outcomes, identities, batches and their back-fills.
	{"Processor", []contractCase{
		{"AWriteFromAStaleReadIsRefused", aWriteFromAStaleReadIsRefused},
		{"TextsAtAndOverTheirColumnWidths", textsAtAndOverTheirColumnWidths},
		{"IdentityKeysCompareExactly", identityKeysCompareExactly},
		{"NotesAndWarningsAreKeptWithinTheirColumns", notesAndWarningsAreKeptWithinTheirColumns},
		{"DueReadsStateAndRawInOrder", dueReadsStateAndRawInOrder},
		{"BatchRollsBackOneMessageAlone", batchRollsBackOneMessageAlone},
		{"BatchIsFencedAndRollsBack", batchIsFencedAndRollsBack},
		{"WritesDuringABatchKeepTheirOwnOutcome", writesDuringABatchKeepTheirOwnOutcome},
		{"ADeferringBatchWritesEveryEventInOrder", aDeferringBatchWritesEveryEventInOrder},
		{"ABatchBackFillsEachMessageWithItsOwnMeta", aBatchBackFillsEachMessageWithItsOwnMeta},
		{"SequenceAtAndOverTheMEDIUMINTMaximum", sequenceAtAndOverTheMediumIntMaximum},
		{"AppliedAfterFindsWhatMaySetAFlightOrARecord", appliedAfterFindsWhatMaySet},
	}},
	// Outbox: MSG_EVENT: delivery marks, counts, listings and the fence of its writes.
	{"Outbox", []contractCase{
		{"OutboxWritesAreFenced", outboxWritesAreFenced},
		{"EventCountsKeepSentTotalsAcrossChunksAndPurges", eventCountsKeepSentTotalsAcrossChunksAndPurges},
		{"DeliveryMarkShowsRunsSentAndKeepsDeadAndReplayed", deliveryMarkShowsRunsSent},
		{"DeliveryMarkPassesOnlyDeliveredRows", deliveryMarkPassesOnlyDeliveredRows},
		{"EventListingsElideLargePayloads", eventListingsElideLargePayloads},
		{"SharedRowsArePendingForEveryTargetThatTakesThem", sharedRowsArePendingForEveryTargetThatTakesThem},
		{"ADeliveryMarkCoversSharedRowsForItsTargetAlone", aDeliveryMarkCoversSharedRowsForItsTargetAlone},
		{"ABackoffGivesATargetItsOwnRowOfASharedEvent", aBackoffGivesATargetItsOwnRowOfASharedEvent},
		{"ADeadSharedEventIsTheTargetsAloneAndReplays", aDeadSharedEventIsTheTargetsAloneAndReplays},
		{"AnAckOfASharedEventDeadOnTwoTargetsIsListedOnce", anAckOfASharedEventDeadOnTwoTargetsIsListedOnce},
		{"ASharedEventSentBeyondAGapIsCountedOnce", aSharedEventSentBeyondAGapIsCountedOnce},
		{"ListingsWithoutATargetShowASharedEventPerTarget", listingsWithoutATargetShowASharedEventPerTarget},
		{"EndedTargetsStopTakingSharedRowsUntilConfiguredAgain", endedTargetsStopTakingSharedRowsUntilConfiguredAgain},
	}},
	// Operations: what operators list, search, park, pause, replay and count, with the edge values they read back.
	{"Operations", []contractCase{
		{"ReplayAfterArchiveReadsTheHistory", replayAfterArchiveReadsTheHistory},
		{"CountStatesCountsTheStatesAsked", countStatesCountsTheStatesAsked},
		{"StateCounterMatchesCountByState", stateCounterMatchesCountByState},
		{"StateCounterCountsACommittedBatchOnce", stateCounterCountsACommittedBatchOnce},
		{"NullColumnsReadBackAsAbsent", nullColumnsReadBackAsAbsent},
		{"WidthLimitedTextsAtAndOneOverTheirWidth", widthLimitedTextsAtAndOneOver},
		{"BodySearchReadsTheNewestBodiesOnly", bodySearchReadsTheNewest},
		{"TextFilterSearchesBodiesWhenAsked", textFilterSearchesBodies},
		{"ParkSetsAsideUnfinishedMessagesAndRefusesFinishedOnes", parkSetsAside},
		{"HistoryKeepsEveryOutcomeAndAction", historyKeepsEveryOutcome},
		{"PausesAreDurableAndIdempotent", pausesAreDurable},
		{"AuditLogKeepsEdgeValues", auditKeepsEdgeValues},
		{"SearchByFlightTagTimeAndText", searchByFlight},
		{"SearchByFlightFindsEveryOutcome", searchByFlightFindsEveryOutcome},
		{"SearchByFlightThroughBatches", searchByFlightThroughBatches},
		{"SearchByFlightLargeSchedule", searchByFlightLargeSchedule},
		{"ReplayPreviewMovesNothing", replayPreviewMovesNothing},
		{"ListingsPageBothWaysInEitherOrder", listingsPageBothWays},
		{"PayloadAndFlightHistoryRenderASharedEventForItsTarget", payloadAndFlightHistoryRenderASharedEventForItsTarget},
	}},
	// Triage: dead letters acknowledged and purged, PROBLEM_LOG.
	{"Triage", []contractCase{
		{"AckKeepsDeadLettersAndCountsThemApart", ackKeepsDeadLetters},
		{"PurgeAckedEventsTakesOnlyOldAcknowledgedDeadEvents", purgeAckedEvents},
		{"RecentProblemsKeepTheNewestWithEdgeValues", recentProblemsKeepTheNewest},
		{"PurgeAckedMessagesTakesOnlyOldAcknowledgedDeadMessages", purgeAckedMessages},
	}},
	// Archiver: ARCHIVE and the retention purges.
	{"Archiver", []contractCase{
		{"ArchiveMovesOnlySucceededAndSkippedMessages", archiveMovesOnlySucceededAndSkippedMessages},
		{"ArchiveWorksInChunks", archiveWorksInChunks},
		{"ArchiveBoundsAChunkByItsBytes", archiveBoundsAChunkByItsBytes},
		{"PurgeSentEventsDeletesMarkedEventsByTheirAge", purgeSentEventsDeletesMarkedEvents},
		{"PurgeSentEventsKeepsADeliveryCommittedBetweenItsReads", purgeKeepsADeliveryBetweenItsReads},
		{"PurgeSentEventsDeletesOnlyOldSentEvents", purgeSentEventsDeletesOnlyOldSentEvents},
		{"PurgeSentEventsWorksInChunks", purgeSentEventsWorksInChunks},
		{"PurgeSentEventsDeletesSharedRowsEveryTargetHasSent", purgeSentEventsDeletesSharedRowsEveryTargetHasSent},
		{"EventIDsKeepRisingAfterTheSharedRowsArePurged", eventIDsKeepRisingAfterTheSharedRowsArePurged},
		{"PurgeArchivedDeletesOnlyFinishedArchivedMessages", purgeArchivedDeletesOnlyFinishedArchivedMessages},
		{"PurgeArchivedWorksInChunks", purgeArchivedWorksInChunks},
	}},
	// JobQueue: PUMP_JOB: a job by its id, the scheduler's enqueue once per key.
	{"JobQueue", []contractCase{
		{"GetJobReadsOneJobAndItsOutcome", getJobReadsOneJob},
		{"ScheduledJobIsEnqueuedOncePerKey", scheduledJobIsEnqueuedOncePerKey},
	}},
	// Leases: PUMP_LEASE and the fence of the pump's writes.
	{"Leases", []contractCase{
		{"LeaseContract", leaseContract},
		{"FenceStopsAReplacedPump", fenceStopsAReplacedPump},
	}},
	// RequestTracker: the data requests: COUTMSGS, REQ_TRACK and the SEQN counter.
	{"RequestTracker", []contractCase{
		{"RequestIsQueuedInCOUTMSGSAndTracked", requestIsQueuedInCOUTMSGSAndTracked},
		{"RequestSEQNCyclesAfter999999", requestSEQNCyclesAfter999999},
		{"RequestTooLongOrUnbuildableWritesNothing", requestTooLongOrUnbuildableWritesNothing},
		{"RequestSentResentAndExpired", requestSentResentAndExpired},
		{"RESPAnswersItsRequestInItsOwnTransaction", respAnswersItsRequestInItsOwnTransaction},
		{"ShadowWritesNoLegacyTable", shadowWritesNoLegacyTable},
		{"ConcurrentRequestsGetDistinctSEQNs", concurrentRequestsGetDistinctSEQNs},
	}},
	// RefData: REF_DATA as the pump replaces it.
	{"RefData", []contractCase{
		{"ReferenceReplaceKeepsWhatItIsToldTo", referenceReplaceKeepsWhatItIsToldTo},
	}},
	// Flights: MSG_FLIGHT and the reads of messages by flight and time.
	{"Flights", []contractCase{
		{"MessagesOfFlightsNewestFirst", messagesOfFlightsNewestFirst},
		{"ProcessedBetweenReadsTheRange", processedBetweenReadsTheRange},
	}},
}

// A batch whose messages defer their events (DeferWrites) writes them at Flush, in message
// then event order (EVENT_ID follows it, as one by one), however many and however large:
// here 510 events of 42 KB each, 4-byte and CJK text included, over 20 MB (more than one
// statement may carry: MariaDB's max_allowed_packet is 16 MB by default), and a message
// rolled back to its savepoint leaves none. LastEventID (the mark of PROJECTION_REBUILD) is 0
// before and the newest EVENT_ID after.
func aDeferringBatchWritesEveryEventInOrder(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	if last, err := db.Outbox.LastEventID(ctx); err != nil || last != 0 {
		t.Fatalf("LastEventID of an empty outbox: %d %v", last, err)
	}
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.DeferWrites()
	pad := strings.Repeat("航班🛫", 6000) // 42,000 bytes
	events := func(msg, n int) []pipeline.Event {
		evs := make([]pipeline.Event, n)
		for i := range evs {
			evs[i] = pipeline.Event{Target: "KAFKA_FLOP", Kind: "update", Key: fmt.Sprint(i),
				Payload: json.RawMessage(fmt.Sprintf(`{"m":%d,"i":%d,"pad":%q}`, msg, i, pad))}
		}
		return evs
	}
	pending := store.Version{State: pipeline.Pending}
	for k, n := range []int{450, 5, 60} {
		s := store.Success{From: pending, TypeTag: "SCHD-DNLD", Identity: fmt.Sprintf("E|%d", k), Decision: pipeline.Decision{Events: events(k, n)}}
		if k == 1 {
			s.From = store.Version{State: pipeline.Failed, Attempts: 9} // stale: refused, rolled back
		}
		got, _, err := b.Succeed(ctx, ids[k], s, nil, now)
		if k == 1 {
			if !errors.Is(err, store.ErrChanged) {
				t.Fatalf("a stale write: %v, want ErrChanged", err)
			}
			continue
		}
		if err != nil || got != n {
			t.Fatalf("message %d: %d events, %v", k, got, err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	seen := storedEvents(t, db, ids, pad)
	if len(seen) != 510 || seen[0] != "0/0" || seen[449] != "0/449" || seen[450] != "2/0" || seen[509] != "2/59" {
		t.Fatalf("%d events, want 510 in message then event order: %v … %v", len(seen), seen[:min(3, len(seen))], seen[max(len(seen)-3, 0):])
	}
	var newest int64
	if err := db.SQLDB().QueryRow(`SELECT EVENT_ID FROM MSG_EVENT ORDER BY EVENT_ID DESC LIMIT 1`).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	if last, err := db.Outbox.LastEventID(ctx); err != nil || last != newest || newest < 510 {
		t.Fatalf("LastEventID: %d %v, want %d", last, err, newest)
	}
	for i := 1; i < len(seen); i++ {
		var m0, i0, m1, i1 int
		fmt.Sscanf(seen[i-1], "%d/%d", &m0, &i0)
		fmt.Sscanf(seen[i], "%d/%d", &m1, &i1)
		if m1 < m0 || (m1 == m0 && i1 != i0+1) {
			t.Fatalf("events out of order at %d: %s then %s", i, seen[i-1], seen[i])
		}
	}
}

// A batch whose messages defer their back-fills (DeferWrites) writes each message's META into
// its own CMINMSGS row at Flush, however many messages share a statement: 250 messages (more
// than one chunk), each with a sender, type, sequence and send time of its own, one without a
// sequence (NULL), and the rows of the messages not in the batch left as they were.
func aBatchBackFillsEachMessageWithItsOwnMeta(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	raws := make([]string, 252)
	for i := range raws {
		raws[i] = fmt.Sprintf("<m n='%d'/>", i)
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.DeferWrites()
	pending := store.Version{State: pipeline.Pending}
	for i, id := range ids[1:251] {
		meta := store.Backfill{SNDR: fmt.Sprintf("S%d", i), TYPE: fmt.Sprintf("T%d", i%7), STYP: "CTOT", SEQN: fmt.Sprint(1000 + i),
			DTTM: now.Add(time.Duration(i) * time.Second)}
		if i == 7 {
			meta.SEQN = ""
		}
		s := store.Success{From: pending, TypeTag: "FLOP-CTOT", Identity: fmt.Sprintf("B|%d", i), Meta: meta}
		if _, _, err := b.Succeed(ctx, id, s, nil, now); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := db.SQLDB().QueryContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_TYPE,
		CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next(); n++ {
		var id int64
		var name, typ, styp, sent sql.NullString
		var seq sql.NullInt64
		if err := rows.Scan(&id, &name, &typ, &styp, &seq, &sent); err != nil {
			t.Fatal(err)
		}
		i := n - 1
		want := fmt.Sprintf("S%d T%d CTOT %d", i, i%7, 1000+i)
		switch {
		case n == 0 || n == 251:
			want = "  " // not in the batch: no back-fill
		case i == 7:
			want = "S7 T0 CTOT"
		}
		got := strings.TrimSpace(name.String) + " " + strings.TrimSpace(typ.String) + " " + strings.TrimSpace(styp.String)
		if seq.Valid {
			got += fmt.Sprintf(" %d", seq.Int64)
		}
		if id != ids[n] || got != want || sent.Valid != (want != "  ") {
			t.Fatalf("CMINMSGS %d: back-fill %q (sent %v), want %q", id, got, sent, want)
		}
		if sent.Valid && !strings.HasPrefix(sent.String, now.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05")) {
			t.Fatalf("CMINMSGS %d: sent %q, want the message's own DTTM %s", id, sent.String, now.Add(time.Duration(i)*time.Second))
		}
	}
	if err := rows.Err(); err != nil || n != 252 {
		t.Fatalf("%d CMINMSGS rows read (%v), want 252", n, err)
	}
}

// storedEvents reads every MSG_EVENT row in EVENT_ID order and returns each as "m/i" (the
// index in ids of its message, and its own index), checking that its payload came back whole
// (with pad) and belongs to its message.
func storedEvents(t *testing.T, db *store.DB, ids []int64, pad string) []string {
	t.Helper()
	rows, err := db.SQLDB().Query(`SELECT CMINMSGS_ID, PAYLOAD FROM MSG_EVENT ORDER BY EVENT_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var seen []string
	for rows.Next() {
		var id int64
		var payload string
		if err := rows.Scan(&id, &payload); err != nil {
			t.Fatal(err)
		}
		var p struct {
			M, I int
			Pad  string
		}
		if err := json.Unmarshal([]byte(payload), &p); err != nil || p.Pad != pad {
			t.Fatalf("event %d of message %d came back changed (%v)", len(seen), id, err)
		}
		if id != ids[p.M] {
			t.Fatalf("event of message %d carries message %d's payload", id, ids[p.M])
		}
		seen = append(seen, fmt.Sprintf("%d/%d", p.M, p.I))
	}
	return seen
}

// Due reads the unfinished messages in id order with their raw text, live or archived, and
// the identity key each holds; finished ones are not due, and limit holds.
func dueReadsStateAndRawInOrder(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<archived/>", "<done/>", "<failed/>", "<pending/>", "<gone/>", "<last/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	// 0: DEAD, archived by an older msgx, replayed: read from the history.
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "x"}, now); err != nil {
		t.Fatal(err)
	}
	Exec(t, db, fmt.Sprintf(`INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS)
		SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS FROM CMINMSGS WHERE CMINMSGS_ID = %d`, ids[0]),
		fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID = %d`, ids[0]))
	if res, err := db.Operations.Replay(ctx, nil, ids[:1], now); err != nil || res.Moved != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{TypeTag: "STTS-ADD", Identity: "A|STTS|ADD|1"}, nil, now); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[2], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "down"}, now); err != nil {
		t.Fatal(err)
	}
	Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET IDENTITY_KEY = 'A|STTS|ADD|4' WHERE CMINMSGS_ID = %d`, ids[3]),
		fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID = %d`, ids[4]))
	due, err := db.Processor.Due(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range due {
		// The message's index, not its id's distance from the first: ids need not be
		// contiguous (a Galera cluster steps them by its size).
		got = append(got, fmt.Sprintf("%d:%s:%v:%s:%s", slices.Index(ids, d.ID), d.State, d.RawOK, d.Raw, d.BoundKey))
	}
	want := []string{"0:PENDING:true:<archived/>:", "2:FAILED:true:<failed/>:", "3:PENDING:true:<pending/>:A|STTS|ADD|4",
		"4:PENDING:false::", "5:PENDING:true:<last/>:"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("due:\n got %v\nwant %v", got, want)
	}
	if due, err := db.Processor.Due(ctx, 2); err != nil || len(due) != 2 || due[1].ID != ids[2] {
		t.Fatalf("due with limit 2: %d %v", len(due), err)
	}
}

// In a batch each message's writes are under a savepoint: a duplicate identity (bound earlier
// in the same batch) and a stale write are refused and leave nothing, the messages around
// them commit, and reads through the batch see its own writes.
func batchRollsBackOneMessageAlone(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Version{State: pipeline.Pending}
	ref := func(key string) pipeline.Decision {
		return pipeline.Decision{Ref: []pipeline.RefChange{{Op: pipeline.RefUpsert, Type: "STTS",
			Record: pipeline.RefRecord{Key: key, Fields: json.RawMessage(`{"STTD":"x"}`)}}}}
	}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Succeed(ctx, ids[0], store.Success{From: pending, TypeTag: "STTS-ADD", Identity: "A|STTS|ADD|1", Decision: ref("A")}, nil, now); err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Succeed(ctx, ids[1], store.Success{From: pending, TypeTag: "STTS-ADD", Identity: "A|STTS|ADD|1", Decision: ref("B")}, nil, now)
	if !errors.Is(err, store.ErrIdentityTaken) {
		t.Fatalf("a duplicate inside the batch: %v, want ErrIdentityTaken", err)
	}
	if holder, ok, err := b.BoundTo(ctx, "A|STTS|ADD|1"); err != nil || !ok || holder != ids[0] {
		t.Fatalf("bound inside the batch: %d %v %v", holder, ok, err)
	}
	if err := b.Record(ctx, ids[1], store.Outcome{State: pipeline.Skipped, LastError: "duplicate", From: pending}, now); err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Succeed(ctx, ids[2], store.Success{From: store.Version{State: pipeline.Failed, Attempts: 3}, TypeTag: "STTS-ADD",
		Identity: "A|STTS|ADD|3", Decision: ref("C")}, nil, now)
	if !errors.Is(err, store.ErrChanged) {
		t.Fatalf("a stale write inside the batch: %v, want ErrChanged", err)
	}
	if keys, err := store.RefKeysTx(ctx, b.Tx(), "STTS"); err != nil || strings.Join(keys, ",") != "A" {
		t.Fatalf("keys through the batch: %v %v", keys, err)
	}
	if _, _, err := b.Succeed(ctx, ids[3], store.Success{From: pending, TypeTag: "STTS-ADD", Identity: "A|STTS|ADD|4", Decision: ref("D")}, nil, now); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []pipeline.ProcStatus{pipeline.Succeeded, pipeline.Skipped, pipeline.Pending, pipeline.Succeeded} {
		if m, _ := db.Operations.GetMessage(ctx, ids[i]); m.State != want {
			t.Errorf("message %d: %s, want %s", i, m.State, want)
		}
	}
	list, _ := db.RefData.RefList(ctx, "STTS")
	var keys []string
	for _, r := range list {
		keys = append(keys, r.Key)
	}
	if strings.Join(keys, ",") != "A,D" {
		t.Fatalf("records after the batch: %v, want A,D", keys)
	}
	var key sql.NullString
	if err := db.SQLDB().QueryRow(`SELECT IDENTITY_KEY FROM PROC_STATE WHERE CMINMSGS_ID = ?`, ids[2]).Scan(&key); err != nil || key.Valid {
		t.Fatalf("the refused message's identity stayed bound: %v %v", key, err)
	}
}

// The inbox's insert and an outbox write made while the pump's batch is open return once they
// are durable (or with their own error), whether the batch commits or rolls back (on SQLite
// they ride the batch's commit: riders.go).
func writesDuringABatchKeepTheirOwnOutcome(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	dead := store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, Attempts: 1, LastError: "x",
		From: store.Version{State: pipeline.Pending}}
	refused := errors.New("refused")
	for i, commit := range []bool{true, false} {
		b, err := db.Processor.BeginBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Record(ctx, ids[i], dead, now); err != nil {
			t.Fatal(err)
		}
		type inserted struct {
			ids []int64
			err error
		}
		inbox, outbox := make(chan inserted, 1), make(chan error, 1)
		go func() {
			got, err := db.Intake.InsertMessages(ctx, []string{"<during/>"}, now)
			inbox <- inserted{got, err}
		}()
		go func() {
			outbox <- db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
				if _, err := tx.MarkSent("T", []int64{1}, now); err != nil {
					return err
				}
				return refused
			})
		}()
		time.Sleep(20 * time.Millisecond) // both wait for the batch's lock on SQLite
		want := pipeline.Pending
		if commit {
			want = pipeline.Dead
			if err := b.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			b.Rollback()
		}
		in := <-inbox
		if in.err != nil || len(in.ids) != 1 || in.ids[0] <= ids[1] {
			t.Fatalf("insert during a batch (commit %v): %v %v", commit, in.ids, in.err)
		}
		if m, err := db.Operations.GetMessage(ctx, in.ids[0]); err != nil || m.State != pipeline.Pending {
			t.Fatalf("message inserted during a batch (commit %v): %+v %v", commit, m, err)
		}
		if err := <-outbox; !errors.Is(err, refused) {
			t.Fatalf("outbox write during a batch (commit %v): %v, want %v", commit, err, refused)
		}
		if m, err := db.Operations.GetMessage(ctx, ids[i]); err != nil || m.State != want {
			t.Fatalf("the batch's own write (commit %v): %+v %v", commit, m, err)
		}
	}
}

// A batch checks the lease when it commits, not before: a batch rolled back writes nothing,
// a batch of an instance that lost the lease commits nothing (ErrFenced), and (MySQL, where
// the lease row has a lock of its own) an open batch does not keep the lease from being
// renewed or taken: the row is locked only for the commit.
func batchIsFencedAndRollsBack(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	dead := store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, Attempts: 1, LastError: "x",
		From: store.Version{State: pipeline.Pending}}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, ids[0], dead, now); err != nil {
		t.Fatal(err)
	}
	b.Rollback()
	if m, _ := db.Operations.GetMessage(ctx, ids[0]); m.State != pipeline.Pending {
		t.Fatalf("a rolled-back batch wrote %s", m.State)
	}
	if err := db.Leases.AcquireLease(ctx, "pump", "a", 15*time.Second, now); err != nil {
		t.Fatal(err)
	}
	db.Leases.SetFence("pump", "a")
	b, err = db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, ids[1], dead, now); err != nil {
		t.Fatal(err)
	}
	if db.Dialect == store.MySQL {
		// The open batch holds no lock on the lease row: renewal and take-over go through.
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := db.Leases.RenewLease(lctx, "pump", "a", 15*time.Second, now); err != nil {
			t.Fatalf("renewal behind an open batch: %v", err)
		}
		err := db.Leases.AcquireLease(lctx, "pump", "b", 15*time.Second, now.Add(20*time.Second))
		cancel()
		if err != nil {
			t.Fatalf("take-over behind an open batch: %v", err)
		}
	} else {
		b.Rollback()
		if err := db.Leases.AcquireLease(ctx, "pump", "b", 15*time.Second, now.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		if b, err = db.Processor.BeginBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Record(ctx, ids[1], dead, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a replaced pump's batch committed: %v, want ErrFenced", err)
	}
	if m, _ := db.Operations.GetMessage(ctx, ids[1]); m.State != pipeline.Pending {
		t.Fatalf("a fenced batch wrote %s", m.State)
	}
}

func migrateTwiceIsANoOp(t *testing.T, db *store.DB) {
	v, err := db.Migrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v < 1 {
		t.Fatalf("schema version %d after migrate", v)
	}
	for _, table := range []string{"CMINMSGS", "CMINMSGS_HST", "PROC_STATE", "MSG_EVENT", "REF_DATA", "REQ_TRACK", "PUMP_JOB", "FLIGHT_STATE", "PUMP_LEASE", "COUTMSGS", "MSGX_COUNTER"} {
		var n int
		if err := db.SQLDB().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

func leaseContract(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	if err := db.Leases.AcquireLease(ctx, "pump", "a", 15*time.Second, t0); err != nil {
		t.Fatal(err)
	}
	var held *store.LeaseHeldError
	if err := db.Leases.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(5*time.Second)); !errors.As(err, &held) || held.Holder != "a" {
		t.Fatalf("second holder while the lease is live: %v", err)
	}
	if err := db.Leases.RenewLease(ctx, "pump", "a", 15*time.Second, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Leases.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(20*time.Second)); !errors.As(err, &held) {
		t.Fatalf("renewal must extend the lease: %v", err)
	}
	// The holder died: once the lease expires another instance takes it, and the old
	// holder's renewal fails so it stops.
	if err := db.Leases.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(26*time.Second)); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if err := db.Leases.RenewLease(ctx, "pump", "a", 15*time.Second, t0.Add(27*time.Second)); err == nil {
		t.Fatal("the old holder renewed a lease it lost")
	}
	if err := db.Leases.ReleaseLease(ctx, "pump", "b"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := db.Leases.LeaseHolder(ctx, "pump"); h != "" {
		t.Fatalf("released lease still held by %q", h)
	}
}

func archiveMovesOnlySucceededAndSkippedMessages(t *testing.T, db *store.DB) {
	ctx := context.Background()
	old := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>", "<e/>"}, old)
	if err != nil {
		t.Fatal(err)
	}
	record := func(id int64, o store.Outcome) {
		t.Helper()
		if err := db.Processor.Record(ctx, id, o, old); err != nil {
			t.Fatal(err)
		}
	}
	record(ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, LastError: "x"})
	record(ids[1], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "y"})
	record(ids[2], store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1"})
	record(ids[3], store.Outcome{State: pipeline.Succeeded})
	// ids[4] stays PENDING.
	n, err := db.Archiver.Archive(ctx, ids[4], old.Add(48*time.Hour), old.Add(48*time.Hour), nil)
	if err != nil || n != 2 {
		t.Fatalf("archived %d (%v), want the SKIPPED and the SUCCEEDED one", n, err)
	}
	inLive := func(id int64) bool {
		var k int
		if err := db.SQLDB().QueryRow(`SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k == 1
	}
	for i, id := range ids {
		if want := i != 2 && i != 3; inLive(id) != want {
			t.Fatalf("message %d in CMINMSGS: %v, want %v", id, !want, want)
		}
	}
	var hst string
	if err := db.SQLDB().QueryRow(`SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS_HST WHERE CMINMSGS_ID = ?`, ids[2]).Scan(&hst); err != nil || hst != "<c/>" {
		t.Fatalf("history row: %q %v", hst, err)
	}
	if raw, ok, err := db.Processor.Raw(ctx, ids[3]); err != nil || !ok || raw != "<d/>" {
		t.Fatalf("the raw text of an archived message must stay readable: %q %v %v", raw, ok, err)
	}
	if m, _ := db.Operations.GetMessage(ctx, ids[3]); m == nil || m.State != pipeline.Succeeded {
		t.Fatalf("the state of an archived message must stay readable: %+v", m)
	}
	// So must its received time, in every way the API reads messages.
	receivedOld := func(what string, m *store.Message) {
		t.Helper()
		if m == nil || m.ReceivedAt == nil || !m.ReceivedAt.Equal(old) {
			t.Fatalf("%s: the received time of archived message %d: %+v, want %v", what, ids[3], m, old)
		}
	}
	m, _ := db.Operations.GetMessage(ctx, ids[3])
	receivedOld("GetMessage", m)
	listed, err := db.Operations.SearchMessages(ctx, store.MessageQuery{State: pipeline.Succeeded})
	if err != nil || len(listed) != 1 {
		t.Fatalf("search the SUCCEEDED messages: %+v %v", listed, err)
	}
	receivedOld("SearchMessages", listed[0])
	// Nothing younger than the retention moves.
	if n, err := db.Archiver.Archive(ctx, ids[4], old, old, nil); err != nil || n != 0 {
		t.Fatalf("archived %d (%v) messages processed after the bound", n, err)
	}
}

func archiveWorksInChunks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	old := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	raws := make([]string, 2*store.ArchiveChunk+7)
	for i := range raws {
		raws[i] = fmt.Sprintf("<m n=\"%d\"/>", i)
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, old)
	if err != nil {
		t.Fatal(err)
	}
	// Every tenth message is DEAD and stays; the others SUCCEEDED.
	Exec(t, db, `UPDATE PROC_STATE SET STATE = 'SUCCEEDED', PROCESSED_AT = '2026-11-01 09:00:00.000000' WHERE MOD(CMINMSGS_ID, 10) <> 0`,
		`UPDATE PROC_STATE SET STATE = 'DEAD', ERROR_CLASS = 'ORPHAN', PROCESSED_AT = '2026-11-01 09:00:00.000000' WHERE MOD(CMINMSGS_ID, 10) = 0`)
	want := 0
	for _, id := range ids {
		if id%10 != 0 {
			want++
		}
	}
	var reports []int
	n, err := db.Archiver.Archive(ctx, ids[len(ids)-1], old.Add(48*time.Hour), old.Add(48*time.Hour), func(moved int) { reports = append(reports, moved) })
	if err != nil || n != want {
		t.Fatalf("archived %d (%v), want %d", n, err, want)
	}
	if len(reports) != (want+store.ArchiveChunk-1)/store.ArchiveChunk || reports[len(reports)-1] != want {
		t.Fatalf("progress per chunk: %v", reports)
	}
	var live, hst int
	db.SQLDB().QueryRow(`SELECT COUNT(*) FROM CMINMSGS`).Scan(&live)
	db.SQLDB().QueryRow(`SELECT COUNT(*) FROM CMINMSGS_HST`).Scan(&hst)
	if live != len(ids)-want || hst != want {
		t.Fatalf("after archive: %d live, %d history; want %d and %d", live, hst, len(ids)-want, want)
	}
}

// Schedules of megabytes each are archived a few per transaction, not ArchiveChunk at once
// (hundreds of megabytes in one transaction, one Galera write set).
func archiveBoundsAChunkByItsBytes(t *testing.T, db *store.DB) {
	ctx := context.Background()
	old := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	big := store.ArchiveChunkBytes * 2 / 5 // two fit in a chunk, three do not
	raws := make([]string, 3)
	for i := range raws {
		raws[i] = fmt.Sprintf("<m n=\"%d\">%s</m>", i, strings.Repeat("é", big/2))
	}
	var ids []int64
	for _, raw := range raws { // one per commit: three in one are over MariaDB's packet
		got, err := db.Intake.InsertMessages(ctx, []string{raw}, old)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	Exec(t, db, `UPDATE PROC_STATE SET STATE = 'SUCCEEDED', PROCESSED_AT = '2026-11-01 09:00:00.000000'`)
	var reports []int
	n, err := db.Archiver.Archive(ctx, ids[len(ids)-1], old.Add(48*time.Hour), old.Add(48*time.Hour), func(moved int) { reports = append(reports, moved) })
	if err != nil || n != 3 {
		t.Fatalf("archived %d (%v), want 3", n, err)
	}
	if !slices.Equal(reports, []int{2, 3}) {
		t.Fatalf("progress per chunk %v, want [2 3]: two messages of %d bytes per chunk of at most %d", reports, big, store.ArchiveChunkBytes)
	}
	var hst string
	if err := db.SQLDB().QueryRow(`SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS_HST WHERE CMINMSGS_ID = ?`, ids[2]).Scan(&hst); err != nil || hst != raws[2] {
		t.Fatalf("the third message in the history: %d bytes (%v), want %d", len(hst), err, len(raws[2]))
	}
}

func replayAfterArchiveReadsTheHistory(t *testing.T, db *store.DB) {
	ctx := context.Background()
	old := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<orphan/>"}, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight"}, old); err != nil {
		t.Fatal(err)
	}
	// An older msgx archived DEAD rows too: move this one by hand.
	Exec(t, db, `INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS)
		SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS FROM CMINMSGS`, `DELETE FROM CMINMSGS`)
	res, err := db.Operations.Replay(ctx, nil, ids, old)
	if err != nil || res.Moved != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if raw, ok, err := db.Processor.Raw(ctx, ids[0]); err != nil || !ok || raw != "<orphan/>" {
		t.Fatalf("replayed archived message: %q %v %v", raw, ok, err)
	}
}

func timesKeepMicrosecondsInUTC(t *testing.T, db *store.DB) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 23, 59, 59, 123456000, time.FixedZone("UTC+8", 8*3600))
	ids, err := db.Intake.InsertMessages(ctx, []string{"<x/>"}, at)
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.Operations.GetMessage(ctx, ids[0])
	want := at
	if receivedInSeconds(t, db) {
		want = at.Truncate(time.Second) // the legacy DATETIME keeps no fraction
	}
	if err != nil || m.ReceivedAt == nil || !m.ReceivedAt.Equal(want) || m.ReceivedAt.Location() != time.UTC {
		t.Fatalf("received_at %v, want %v in UTC", m.ReceivedAt, want.UTC())
	}
}

func fenceStopsAReplacedPump(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Leases.AcquireLease(ctx, "pump", "a", 15*time.Second, t0); err != nil {
		t.Fatal(err)
	}
	db.Leases.SetFence("pump", "a")
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "x"}, t0); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	// a was paused past its lease; b took over.
	if err := db.Leases.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Exhausted, Attempts: 2, LastError: "y"}, t0); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a replaced pump's Record: %v, want ErrFenced", err)
	}
	_, _, err = db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "A|X|Y|1"}, nil, t0)
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a replaced pump's Succeed: %v, want ErrFenced", err)
	}
	if m, _ := db.Operations.GetMessage(ctx, ids[0]); m.State != pipeline.Failed || m.Attempts != 1 {
		t.Fatalf("the fenced writes changed the message: %+v", m)
	}
}

// The pump's writes are conditional on the row it read: an operator's replay in between is
// never overwritten (no lost update).
func aWriteFromAStaleReadIsRefused(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight"}, now); err != nil {
		t.Fatal(err)
	}
	read, _ := db.Operations.GetMessage(ctx, ids[0])
	if res, err := db.Operations.Replay(ctx, nil, ids, now); err != nil || res.Moved != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// The pump, working from what it read before the replay, now records an outcome.
	err = db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Exhausted, Attempts: 2, LastError: "late", From: store.VersionOf(read)}, now)
	if !errors.Is(err, store.ErrChanged) {
		t.Fatalf("stale write: %v, want ErrChanged", err)
	}
	_, _, err = db.Processor.Succeed(ctx, ids[0], store.Success{From: store.VersionOf(read), TypeTag: "STTS-ADD", Identity: "A|B|C|1"}, nil, now)
	if !errors.Is(err, store.ErrChanged) {
		t.Fatalf("stale success: %v, want ErrChanged", err)
	}
	if m, _ := db.Operations.GetMessage(ctx, ids[0]); m.State != pipeline.Pending || m.Attempts != 0 {
		t.Fatalf("the replay was overwritten: %+v", m)
	}
	// From the current read it goes through.
	cur, _ := db.Operations.GetMessage(ctx, ids[0])
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{From: store.VersionOf(cur), TypeTag: "STTS-ADD", Identity: "A|B|C|1"}, nil, now); err != nil {
		t.Fatal(err)
	}
}

// Texts at and over each column's width, in ASCII, CJK and 4-byte characters, are stored
// fitted: the identity key stays unique and stable, the shown values are cut at a character.
func textsAtAndOverTheirColumnWidths(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	idents := []string{
		strings.Repeat("a", store.IdentityWidth),          // exactly fits
		strings.Repeat("a", store.IdentityWidth) + "b",    // one over
		strings.Repeat("a", store.IdentityWidth) + "c",    // one over, same prefix
		strings.Repeat("机", store.IdentityWidth),          // CJK, fits in characters
		strings.Repeat("机", store.IdentityWidth+1),        // CJK, one over
		strings.Repeat("\U0001F6EB", store.IdentityWidth), // 4-byte, fits
		strings.Repeat("\U0001F6EB", 1000),                // 4-byte, far over
	}
	raws := make([]string, len(idents))
	for i := range raws {
		raws[i] = "<x/>"
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, ident := range idents {
		if _, _, err := db.Processor.Succeed(ctx, ids[i], store.Success{TypeTag: strings.Repeat("T", store.TypeTagWidth+5), Identity: ident}, nil, now); err != nil {
			t.Fatalf("identity %d (%d characters): %v", i, len([]rune(ident)), err)
		}
		holder, bound, err := db.Processor.BoundTo(ctx, ident)
		if err != nil || !bound || holder != ids[i] {
			t.Fatalf("identity %d bound to %d %v %v", i, holder, bound, err)
		}
		m, _ := db.Operations.GetMessage(ctx, ids[i])
		if n := len([]rune(*m.Identity)); n > store.IdentityWidth {
			t.Fatalf("identity %d shown with %d characters", i, n)
		}
		if len([]rune(ident)) <= store.IdentityWidth && *m.Identity != ident {
			t.Fatalf("identity %d that fits was changed to %q", i, *m.Identity)
		}
		if n := len([]rune(*m.TypeTag)); n != store.TypeTagWidth {
			t.Fatalf("type tag of %d characters", n)
		}
	}
	// Binding a long identity a second time is refused as a duplicate.
	more, _ := db.Intake.InsertMessages(ctx, []string{"<y/>"}, now)
	if _, _, err := db.Processor.Succeed(ctx, more[0], store.Success{TypeTag: "X", Identity: idents[6]}, nil, now); !errors.Is(err, store.ErrIdentityTaken) {
		t.Fatalf("second bind of a long identity: %v", err)
	}
	// A last error far over its width, with invalid UTF-8, is stored cut and repaired.
	last := "\xff" + strings.Repeat("\U0001F6EB", 2*store.LastErrorWidth)
	if err := db.Processor.Record(ctx, more[0], store.Outcome{State: pipeline.Dead, Class: pipeline.CodecError, Attempts: 1, LastError: last}, now); err != nil {
		t.Fatal(err)
	}
	m, _ := db.Operations.GetMessage(ctx, more[0])
	if n := len([]rune(*m.LastError)); n != store.LastErrorWidth || !strings.HasSuffix(*m.LastError, "…") {
		t.Fatalf("last error of %d characters", n)
	}
}

// Identity keys that differ only by letter case, by trailing spaces or by an accent are
// different identities on every dialect (MariaDB's default collation would merge them): each
// binds, each is found as its own holder, by one key and in a batch's read-ahead, and binding
// one of them again is refused.
func identityKeysCompareExactly(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	idents := []string{
		"AODB|AIRL|UPD|7",
		"aodb|AIRL|UPD|7",
		"AODB|AIRL|UPD|7 ",
		"AODB|AIRL|UPD|7  ",
		"ÅODB|AIRL|UPD|7",
		"机场|AIRL|UPD|7",
		"🛫|AIRL|UPD|7",
	}
	raws := make([]string, len(idents)+1)
	for i := range raws {
		raws[i] = "<x/>"
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, ident := range idents {
		if _, _, err := db.Processor.Succeed(ctx, ids[i], store.Success{TypeTag: "AIRL-UPD", Identity: ident}, nil, now); err != nil {
			t.Fatalf("identity %q after the ones before it: %v", ident, err)
		}
	}
	for i, ident := range idents {
		if holder, ok, err := db.Processor.BoundTo(ctx, ident); err != nil || !ok || holder != ids[i] {
			t.Errorf("identity %q bound to %d %v %v, want %d", ident, holder, ok, err, ids[i])
		}
	}
	if _, ok, err := db.Processor.BoundTo(ctx, "AODB|AIRL|UPD|8"); err != nil || ok {
		t.Fatalf("an identity never bound: %v %v", ok, err)
	}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	among, err := b.BoundAmong(ctx, append(idents, "Aodb|AIRL|UPD|7"))
	if err != nil {
		t.Fatal(err)
	}
	for i, ident := range idents {
		if among[store.IdentityKey(ident)] != ids[i] {
			t.Errorf("read ahead in a batch: %q held by %d, want %d", ident, among[store.IdentityKey(ident)], ids[i])
		}
	}
	if len(among) != len(idents) {
		t.Errorf("read ahead in a batch found %d holders for %d bound identities and one never bound: %v", len(among), len(idents), among)
	}
	if holder, ok, err := b.BoundTo(ctx, "aodb|AIRL|UPD|7"); err != nil || !ok || holder != ids[1] {
		t.Errorf("in a batch: %d %v %v", holder, ok, err)
	}
	b.Rollback()
	if _, _, err := db.Processor.Succeed(ctx, ids[len(idents)], store.Success{TypeTag: "AIRL-UPD", Identity: "aodb|AIRL|UPD|7"}, nil, now); !errors.Is(err, store.ErrIdentityTaken) {
		t.Fatalf("the same identity bound twice: %v", err)
	}
}

// receivedInSeconds reports whether CMINMSGS_DATE_RECEIVED keeps whole seconds only (the
// legacy table's DATETIME).
func receivedInSeconds(t *testing.T, db *store.DB) bool {
	if db.SQLDialect() != store.MySQL {
		return false
	}
	var prec int
	err := db.SQLDB().QueryRow(`SELECT DATETIME_PRECISION FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS' AND COLUMN_NAME = 'CMINMSGS_DATE_RECEIVED'`).Scan(&prec)
	if err != nil {
		t.Fatal(err)
	}
	return prec == 0
}

// The outbox: events of a message come back in EVENT_ID order per target; a fenced change
// applies only to a row still as it was read; SENT only to a PENDING row; replay only moves
// DEAD rows that are not MALFORMED; a long last error is fitted.
func outboxWritesAreFenced(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<m/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pipeline.Event
	for i := 0; i < 4; i++ {
		evs = append(evs, pipeline.Event{Target: "T1", Kind: "k", Key: fmt.Sprint(100 + i), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	evs = append(evs, pipeline.Event{Target: "T2", Kind: "k", Payload: []byte(`{"航":"✈"}`)})
	if n, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "a|b|c|1", Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil || n != 5 {
		t.Fatalf("succeed: %d events, %v", n, err)
	}
	head, err := db.Outbox.PendingEvents(ctx, "T1", 10)
	if err != nil || len(head) != 4 || head[0].Key() != "100" || string(head[3].Raw) != `{"n":3}` {
		t.Fatalf("pending T1: %d %v", len(head), err)
	}
	if ok, err := db.Outbox.PendingAtLeast(ctx, "T1", 4); err != nil || !ok {
		t.Fatalf("at least 4: %v %v", ok, err)
	}
	if ok, _ := db.Outbox.PendingAtLeast(ctx, "T1", 5); ok {
		t.Fatal("at least 5 of 4")
	}
	long := strings.Repeat("\U0001F6EB", 3000)
	change := store.EventChange{State: pipeline.EventPending, AddAttempt: true, NextAttemptAt: now.Add(time.Second), FirstFailedAt: now,
		Class: pipeline.Infra, LastError: long}
	var changed, stale int
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) (err error) {
		if changed, err = tx.Change([]*store.Event{&head[0], &head[1]}, change); err != nil {
			return err
		}
		// The same decision from the same (now stale) read changes nothing.
		stale, err = tx.Change([]*store.Event{&head[0]}, change)
		return err
	})
	if err != nil || changed != 2 || stale != 0 {
		t.Fatalf("fenced change: %d then %d, %v", changed, stale, err)
	}
	now2, _ := db.Outbox.PendingEvents(ctx, "T1", 1)
	if now2[0].Attempts != 1 || now2[0].FirstFailedAt == nil || len([]rune(now2[0].LastErrorText())) > 2000 {
		t.Fatalf("after a failure: %+v", now2[0])
	}
	// Kill it, replay it: a decision taken on the read before the replay is refused.
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		_, err := tx.Change([]*store.Event{&now2[0]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if moved, skipped, err := db.Outbox.ReplayEvents(ctx, "T1", []int64{now2[0].EventID, head[2].EventID}); err != nil || moved != 1 || skipped != 1 {
		t.Fatalf("replay: moved %d skipped %d %v", moved, skipped, err)
	}
	var n int
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) (err error) {
		n, err = tx.Change([]*store.Event{&now2[0]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Exhausted, LastError: "late"})
		return err
	})
	if err != nil || n != 0 {
		t.Fatalf("a stale DEAD overwrote a replay: %d %v", n, err)
	}
	sentOnceAndMalformedNeverReplayed(t, db, head, now)
}

// sentOnceAndMalformedNeverReplayed goes on from outboxWritesAreFenced with the four T1
// events of head and the one T2 event: MarkSent moves only PENDING rows, a MALFORMED dead
// event is never replayed, and the counts and the listing show the outbox as left.
func sentOnceAndMalformedNeverReplayed(t *testing.T, db *store.DB, head []store.Event, now time.Time) {
	ctx := context.Background()
	// SENT only moves PENDING rows.
	var marked int
	err := db.Outbox.EventTx(ctx, func(tx store.EventTx) (err error) {
		marked, err = tx.MarkSent("T1", []int64{head[0].EventID, head[1].EventID, head[2].EventID, head[3].EventID}, now)
		return err
	})
	if err != nil || marked != 4 {
		t.Fatalf("marked %d %v", marked, err)
	}
	// An id of another target is left alone.
	t2, _ := db.Outbox.PendingEvents(ctx, "T2", 1)
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) (err error) {
		marked, err = tx.MarkSent("T1", []int64{t2[0].EventID}, now)
		return err
	})
	if err != nil || marked != 0 {
		t.Fatalf("marked an event of T2 as T1's: %d %v", marked, err)
	}
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) (err error) {
		marked, err = tx.MarkSent("T1", []int64{head[0].EventID}, now)
		return err
	})
	if err != nil || marked != 0 {
		t.Fatalf("marked a SENT row again: %d %v", marked, err)
	}
	// A MALFORMED dead event is never replayed.
	db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		_, err := tx.Change([]*store.Event{&t2[0]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Malformed, LastError: "bad"})
		return err
	})
	if moved, _, err := db.Outbox.ReplayEvents(ctx, "", nil); err != nil || moved != 0 {
		t.Fatalf("replayed a MALFORMED event: %d %v", moved, err)
	}
	counts, err := db.Outbox.EventCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range counts {
		got[c.Target+"/"+string(c.State)] = c.Count
	}
	if got["T1/SENT"] != 4 || got["T2/DEAD"] != 1 || len(got) != 2 {
		t.Fatalf("counts %v", got)
	}
	list, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: "T2"})
	if err != nil || len(list) != 1 || string(list[0].Payload) != `{"航":"✈"}` {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func notesAndWarningsAreKeptWithinTheirColumns(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	// A success with a plain note and CJK and 4-byte warnings keeps them as written.
	ws := []string{"FLTR[2] FLID 7002 left out: MVIN \"d\" is not A or D", "未知元素 FOO 已忽略", "\U0001F6EB <&>"}
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "SCHD-DNLD", Identity: "a", Note: "2 flights written", Warnings: ws}, nil, now); err != nil {
		t.Fatal(err)
	}
	m, _ := db.Operations.GetMessage(ctx, ids[0])
	if m.Note != "2 flights written" || strings.Join(m.Warnings, "|") != strings.Join(ws, "|") {
		t.Fatalf("note %q warnings %q", m.Note, m.Warnings)
	}
	// Far too much of both, with invalid UTF-8: cut to the columns, the warnings still a whole list.
	note := "\xff" + strings.Repeat("机", 3*store.NoteWidth)
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("%d %s", i, strings.Repeat("\U0001F6EB", store.WarningWidth+10))
	}
	if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, Attempts: 1, LastError: "x", Note: note, Warnings: many}, now); err != nil {
		t.Fatal(err)
	}
	m, _ = db.Operations.GetMessage(ctx, ids[1])
	if n := len([]rune(m.Note)); n != store.NoteWidth || !utf8.ValidString(m.Note) {
		t.Fatalf("note of %d characters", n)
	}
	if len(m.Warnings) < 2 || len(m.Warnings) >= len(many) || !strings.Contains(m.Warnings[len(m.Warnings)-1], "more warnings") {
		t.Fatalf("%d warnings kept, last %q", len(m.Warnings), m.Warnings[len(m.Warnings)-1])
	}
	for _, w := range m.Warnings {
		if len([]rune(w)) > store.WarningWidth {
			t.Fatalf("a warning of %d characters", len([]rune(w)))
		}
	}
	// A message with none shows an empty list, not null.
	m, _ = db.Operations.GetMessage(ctx, ids[2])
	if m.Warnings == nil || len(m.Warnings) != 0 || m.Note != "" {
		t.Fatalf("unprocessed message: note %q warnings %#v", m.Note, m.Warnings)
	}
}

func referenceReplaceKeepsWhatItIsToldTo(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rec := func(k, v string) pipeline.RefRecord {
		return pipeline.RefRecord{Key: k, Fields: json.RawMessage(fmt.Sprintf(`{"STTC":%q,"STTD":%q}`, k, v))}
	}
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(id int64, ch pipeline.RefChange) {
		t.Helper()
		ch.Op, ch.Type = pipeline.RefReplace, "STTS"
		if _, _, err := db.Processor.Succeed(ctx, id, store.Success{TypeTag: "STTS-DNLD", Identity: fmt.Sprint(id), Decision: pipeline.Decision{Ref: []pipeline.RefChange{ch}}}, nil, now); err != nil {
			t.Fatal(err)
		}
	}
	keys := func() string {
		t.Helper()
		es, err := db.RefData.RefList(ctx, "STTS")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Key+"="+string(e.Fields))
		}
		return strings.Join(out, " ")
	}
	apply(ids[0], pipeline.RefChange{Records: []pipeline.RefRecord{rec("ARR", "arrived"), rec("DEP", "departed"), rec("机场", "机场")}})
	// DEP was invalid in the next replace: kept as stored, neither written nor deleted.
	apply(ids[1], pipeline.RefChange{Records: []pipeline.RefRecord{rec("ARR", "landed")}, Keep: []string{"DEP"}})
	if got := keys(); !strings.Contains(got, `ARR={"STTC":"ARR","STTD":"landed"}`) || !strings.Contains(got, `DEP={"STTC":"DEP","STTD":"departed"}`) || strings.Contains(got, "机场") {
		t.Fatalf("after a replace keeping DEP: %s", got)
	}
	// An invalid record whose key was unreadable: nothing is deleted.
	apply(ids[2], pipeline.RefChange{Records: []pipeline.RefRecord{rec("CNL", "cancelled")}, NoDelete: true})
	if got := keys(); !strings.Contains(got, "ARR=") || !strings.Contains(got, "DEP=") || !strings.Contains(got, "CNL=") {
		t.Fatalf("after a replace that may not delete: %s", got)
	}
	// Every record invalid, but the keys known: an empty replacement that keeps them is no wipe.
	apply(ids[3], pipeline.RefChange{Keep: []string{"ARR", "DEP", "CNL"}})
	if got := keys(); strings.Count(got, "=") != 3 {
		t.Fatalf("after an empty replace keeping everything: %s", got)
	}
}

// The inbox writes a batch with a few multi-row statements; the ids still follow the order of
// the messages, across chunks split by count and by size, and each id holds its own text.
func inboxBatchesKeepTheirOrderAcrossChunks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	raws := make([]string, 450)
	for i := range raws {
		raws[i] = fmt.Sprintf("<m n=\"%d\">机场 \U0001F6EB '\\ \"</m>", i)
		if i%97 == 5 {
			raws[i] += strings.Repeat("x", 1<<20) // a few large ones force size-bound chunks
		}
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(raws) {
		t.Fatalf("%d ids for %d messages", len(ids), len(raws))
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("ids out of order at %d: %d after %d", i, id, ids[i-1])
		}
		raw, ok, err := db.Processor.Raw(ctx, id)
		if err != nil || !ok || raw != raws[i] {
			t.Fatalf("message %d (id %d) holds %d bytes %.40q, want %.40q (%v)", i, id, len(raw), raw, raws[i], err)
		}
		if m, _ := db.Operations.GetMessage(ctx, id); m == nil || m.State != pipeline.Pending {
			t.Fatalf("message %d has no PENDING state: %+v", id, m)
		}
	}
}

// EventCounts reads a target's SENT count from the totals MarkSent keeps in its transaction:
// exact across id chunks, for ids given twice, for rows marked again (not counted twice), for
// a transaction rolled back (not counted), and after SENT rows are deleted (still counted);
// PENDING and DEAD counts and the oldest pending come from the rows. Target names at the
// column's width work.
func eventCountsKeepSentTotalsAcrossChunksAndPurges(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	long := strings.Repeat("T", 64)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pipeline.Event
	for i := range 1203 {
		evs = append(evs, pipeline.Event{Target: "A", Kind: "k", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	evs = append(evs, pipeline.Event{Target: long, Kind: "k", Payload: []byte(`{}`)}, pipeline.Event{Target: long, Kind: "k", Payload: []byte(`{}`)})
	if n, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "count|1", Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil || n != len(evs) {
		t.Fatalf("succeed: %d events, %v", n, err)
	}
	later := now.Add(time.Minute)
	if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{TypeTag: "X-Y", Identity: "count|2",
		Decision: pipeline.Decision{Events: []pipeline.Event{{Target: "B", Kind: "k", Payload: []byte(`{}`)}}}}, nil, later); err != nil {
		t.Fatal(err)
	}
	a, err := db.Outbox.PendingEvents(ctx, "A", 2000)
	if err != nil || len(a) != 1203 {
		t.Fatalf("pending A: %d %v", len(a), err)
	}
	var sendIDs []int64
	for _, e := range a[:1200] {
		sendIDs = append(sendIDs, e.EventID)
	}
	sendIDs = append(sendIDs, a[0].EventID, a[700].EventID) // twice: counted once
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		n, err := tx.MarkSent("A", sendIDs, now.Add(time.Second))
		if err == nil && n != 1200 {
			err = fmt.Errorf("marked %d of 1200", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Marked again: nothing more counted. A rolled-back mark counts nothing.
	rollback := errors.New("roll back")
	db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		_, err := tx.MarkSent("A", sendIDs[:10], now.Add(2*time.Second))
		return err
	})
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		if _, err := tx.MarkSent("A", []int64{a[1200].EventID}, now.Add(3*time.Second)); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("rolled-back mark: %v", err)
	}
	l, _ := db.Outbox.PendingEvents(ctx, long, 2)
	db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		if _, err := tx.MarkSent(long, []int64{l[0].EventID}, now.Add(time.Second)); err != nil {
			return err
		}
		_, err := tx.Change([]*store.Event{&l[1]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"})
		return err
	})
	checkEventCounts(t, db, "after the marks", now, later, long)
	// Retention deletes SENT rows: the totals count every event ever sent.
	if n, err := db.Archiver.PurgeSentEvents(ctx, now.Add(time.Hour), nil); err != nil || n != 1201 {
		t.Fatalf("purged %d of 1201 SENT events: %v", n, err)
	}
	checkEventCounts(t, db, "after the SENT rows are deleted", now, later, long)
}

// checkEventCounts checks the outbox's counts per target and state as
// eventCountsKeepSentTotalsAcrossChunksAndPurges leaves them (when says at which point).
func checkEventCounts(t *testing.T, db *store.DB, when string, now, later time.Time, long string) {
	t.Helper()
	ctx := context.Background()
	counts, err := db.Outbox.EventCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range counts {
		got[c.Target+"/"+string(c.State)] = c.Count
		if c.State == pipeline.EventPending && c.Target == "A" && (!c.Oldest.Valid || !c.Oldest.Time.Equal(now)) {
			t.Errorf("%s: oldest pending of A %+v, want %s", when, c.Oldest, now)
		}
		if c.State == pipeline.EventPending && c.Target == "B" && !c.Oldest.Time.Equal(later) {
			t.Errorf("%s: oldest pending of B %+v, want %s", when, c.Oldest, later)
		}
	}
	want := map[string]int64{"A/SENT": 1200, "A/PENDING": 3, "B/PENDING": 1, long + "/SENT": 1, long + "/DEAD": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: counts %v, want %v", when, got, want)
	}
}

// CountStates counts exactly the states asked, 0 for one with no messages, as CountByState does.
func countStatesCountsTheStatesAsked(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "x"}, now); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1"}, now); err != nil {
		t.Fatal(err)
	}
	got, err := db.Operations.CountStates(ctx, pipeline.Pending, pipeline.Failed, pipeline.Dead)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(map[pipeline.ProcStatus]int{pipeline.Pending: 2, pipeline.Failed: 0, pipeline.Dead: 1}) {
		t.Fatalf("CountStates: %v", got)
	}
	all, err := db.Operations.CountByState(ctx)
	if err != nil || all[pipeline.Skipped] != 1 || all[pipeline.Pending] != got[pipeline.Pending] {
		t.Fatalf("CountByState %v %v", all, err)
	}
}

// A StateCounter gives what CountByState gives as messages are processed below and above the
// head its base was counted at, replayed, and received; its base, once refreshed, takes in a
// finished row deleted (retention) that the old base still counted.
func stateCounterMatchesCountByState(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := db.Operations.NewStateCounter()
	c.Every = time.Hour // refreshed by hand below
	same := func(when string) {
		t.Helper()
		got, err := c.Counts(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		want, err := db.Operations.CountByState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: StateCounter %v, CountByState %v", when, got, want)
		}
	}
	same("empty")
	ids, err := db.Intake.InsertMessages(ctx, []string{"<1/>", "<2/>", "<3/>", "<4/>", "<5/>", "<6/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	record := func(i int, o store.Outcome) {
		t.Helper()
		if err := db.Processor.Record(ctx, ids[i], o, now); err != nil {
			t.Fatal(err)
		}
	}
	record(0, store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:9"})
	record(1, store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "x"})
	if err := c.Refresh(ctx, now); err != nil { // the head is ids[2]
		t.Fatal(err)
	}
	same("after the base")
	if _, _, err := db.Processor.Succeed(ctx, ids[2], store.Success{TypeTag: "X-Y", Identity: "sc|3"}, nil, now); err != nil {
		t.Fatal(err)
	}
	record(3, store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, FirstFailedAt: now, NextAttemptAt: now, LastError: "down"})
	if _, _, err := db.Processor.Succeed(ctx, ids[4], store.Success{TypeTag: "X-Y", Identity: "sc|5"}, nil, now); err != nil {
		t.Fatal(err)
	}
	same("processed above the base's head")
	if res, err := db.Operations.Replay(ctx, []pipeline.ErrorClass{pipeline.Orphan}, nil, now); err != nil || res.Moved != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if _, err := db.Intake.InsertMessages(ctx, []string{"<7/>"}, now); err != nil {
		t.Fatal(err)
	}
	same("replayed below the head, and received")
	if _, err := db.SQLDB().ExecContext(ctx, `DELETE FROM PROC_STATE WHERE CMINMSGS_ID = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx, now); err != nil {
		t.Fatal(err)
	}
	same("a finished row deleted, after a refresh")
}

// A StateCounter reads one call's counts in one snapshot: a pump batch committed between its
// count of the unfinished states and that of the finished ones (here PENDING messages made
// SUCCEEDED, above the base's head) is counted in its old states, not in both, so the counts
// add up to the messages; the next call counts it in its new ones. The reads hold no write
// lock: the batch commits at once, not after a wait of the busy timeout.
func stateCounterCountsACommittedBatchOnce(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<1/>", "<2/>", "<3/>", "<4/>", "<5/>", "<6/>", "<7/>", "<8/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	succeed := func(i int) {
		t.Helper()
		if _, _, err := db.Processor.Succeed(ctx, ids[i], store.Success{TypeTag: "X-Y", Identity: fmt.Sprintf("once|%d", i)}, nil, now); err != nil {
			t.Fatal(err)
		}
	}
	succeed(0)
	succeed(1)
	c := db.Operations.NewStateCounter()
	c.Every = time.Hour
	if _, err := c.Counts(ctx, now); err != nil { // the base: 2 SUCCEEDED below ids[2]
		t.Fatal(err)
	}
	succeed(2)
	succeed(3)
	if err := db.Processor.Record(ctx, ids[4], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1,
		FirstFailedAt: now, NextAttemptAt: now, LastError: "down"}, now); err != nil {
		t.Fatal(err)
	}
	before, err := db.Operations.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.BetweenReads = func() {
		c.BetweenReads = nil
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		b, err := db.Processor.BeginBatch(bctx)
		if err != nil {
			t.Error(err)
			return
		}
		for i := 5; i < 8; i++ {
			s := store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: "X-Y", Identity: fmt.Sprintf("once|%d", i)}
			if _, _, err := b.Succeed(bctx, ids[i], s, nil, now); err != nil {
				b.Rollback()
				t.Error(err)
				return
			}
		}
		if err := b.Commit(bctx); err != nil {
			t.Error(err)
		}
	}
	got, err := c.Counts(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.BetweenReads != nil {
		t.Fatal("the batch was not committed between the reads")
	}
	total := 0
	for _, n := range got {
		total += n
	}
	if total != len(ids) || fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a batch committed between the reads: counts %v (%d messages), want %v (%d)", got, total, before, len(ids))
	}
	after, err := db.Operations.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = c.Counts(ctx, now); err != nil || fmt.Sprint(got) != fmt.Sprint(after) || after[pipeline.Pending] != 0 {
		t.Fatalf("the next call: counts %v %v, CountByState %v", got, err, after)
	}
}
