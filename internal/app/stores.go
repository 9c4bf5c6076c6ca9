package app

import "msgx/internal/store"

// The consumers whose interfaces span several of the store's table owners (store.DB's
// fields) take one of these values: each embeds the owners it is made of, so the owners a
// consumer reaches are named here and what it may do stays in its own interface.

// pumpStore is pump.Store: the inbox rows the pump adopts, its processing states and batches,
// and the jobs ordered with the messages.
type pumpStore struct {
	*store.Intake
	*store.Processor
	*store.JobQueue
}

func newPumpStore(db *store.DB) pumpStore { return pumpStore{db.Intake, db.Processor, db.JobQueue} }

// apiStore is api.Store: what the HTTP API reads and changes; also the state sampler's
// api.MetricsStore and the database check's api.HealthStore.
type apiStore struct {
	store.Health // the database's ping
	*store.Operations
	*store.Outbox
	*store.RefData
	*store.JobQueue
	*store.Triage
	*store.Processor // the head and the raw texts
	*store.Leases    // who holds the pump lease
}

func newAPIStore(db *store.DB) apiStore {
	return apiStore{db, db.Operations, db.Outbox, db.RefData, db.JobQueue, db.Triage, db.Processor, db.Leases}
}

// flightDB is flight.DB: the SQL handle for FLIGHT_STATE and the reference data.
type flightDB struct {
	store.SQLHandle
	*store.RefData
}

// consoleStore is console.Store: the throughput's times and the raw texts.
type consoleStore struct {
	*store.Flights
	*store.Processor
}
