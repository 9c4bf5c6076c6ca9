package storetest

import "msgx/internal/store"

// The values the tests of the store's consumers build them from: each embeds the table owners
// of a database that one consumer's interface spans, as the wiring (internal/app) does.

// PumpStore is what pump.New takes: the inbox rows the pump adopts, its processing states and
// batches, and the jobs.
type PumpStore struct {
	*store.Intake
	*store.Processor
	*store.JobQueue
}

// Pump returns db as pump.New takes it.
func Pump(db *store.DB) PumpStore { return PumpStore{db.Intake, db.Processor, db.JobQueue} }

// FlightDB is what flight.New takes: the SQL handle (FLIGHT_STATE) and the reference data.
type FlightDB struct {
	store.SQLHandle
	*store.RefData
}

// Flight returns db as flight.New takes it.
func Flight(db *store.DB) FlightDB { return FlightDB{db, db.RefData} }

// APIStore is what api.Server takes: the operators' reads and actions, the outbox, the
// reference data, the jobs, the dead letters, the head and raw texts, the lease's holder and
// the database's ping.
type APIStore struct {
	store.Health
	*store.Operations
	*store.Outbox
	*store.RefData
	*store.JobQueue
	*store.Triage
	*store.Processor
	*store.Leases
}

// API returns db as api.Server takes it.
func API(db *store.DB) APIStore {
	return APIStore{db, db.Operations, db.Outbox, db.RefData, db.JobQueue, db.Triage, db.Processor, db.Leases}
}
