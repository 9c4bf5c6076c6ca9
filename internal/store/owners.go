package store

import "database/sql"

// Intake owns CMINMSGS as msgx writes it: the inbox's inserts, the adoption of the rows the
// legacy gateway inserts, and what msgx knows of the legacy columns (their options and
// learnt types, and shadow mode).
type Intake struct {
	db     *DB
	legacy *legacyState // the legacy CMINMSGS columns: options and learnt types (cminmsgs.go)

	// maxPacket is MySQL's max_allowed_packet (0 on SQLite): a message that cannot fit in one
	// is refused before it is sent, since the server answers it by dropping the connection.
	maxPacket int
}

// Processor is the pump's side of PROC_STATE: the head, the raw text, identity binding, the
// outcome of each message, and the batches in which runs of them commit.
type Processor struct {
	db        *DB
	riders    *riders                           // SQLite: the short writes waiting to ride a commit (riders.go); nil on MySQL
	traceHook func(msgID int64, traceID string) // set by SetTraceHook (retention.go)
}

// Outbox owns MSG_EVENT and MSG_EVENT_SENT: the dispatcher's heads and delivery marks, and
// the operators' listings, counts and replays of events.
type Outbox struct{ db *DB }

// Operations is what operators read and do: message listings and searches, replay, parking,
// history, audit and pauses.
type Operations struct{ db *DB }

// Triage owns the dead letters' acknowledgements (DEAD_ACK) and PROBLEM_LOG.
type Triage struct{ db *DB }

// Archiver moves finished messages to CMINMSGS_HST and runs the retention purges.
type Archiver struct {
	db                *DB
	betweenRaiseReads func() // set by SetBetweenRaiseReads (retention.go)
}

// JobQueue owns PUMP_JOB, the jobs ordered with the messages.
type JobQueue struct{ db *DB }

// Leases owns PUMP_LEASE: the one-pump-per-database lease, on its own pool, and the fence the
// pump's writes check.
type Leases struct {
	db *DB
	// sql is the lease's own pool: its renewal never waits for a connection of DB.SQL, which
	// the pump, the dispatcher and the inbox share.
	sql   *sql.DB
	fence *fence // set by SetFence: the pump's writes check the lease
}

// RequestTracker owns the data requests to the AODB: COUTMSGS, REQ_TRACK and MSGX_COUNTER.
type RequestTracker struct{ db *DB }

// RefData reads REF_DATA; the pump writes it through Processor.Succeed.
type RefData struct{ db *DB }

// Flights reads which messages named which flights (MSG_FLIGHT) and the applied messages as
// of a past time.
type Flights struct{ db *DB }
