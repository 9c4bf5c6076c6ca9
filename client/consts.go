package client

// The API's limits and the values its filters take, as docs/api.md states them, so that a
// program checks a command line before it asks the server.

// MaxPageLimit is the most rows one page of a listing (messages, events, jobs, audit,
// requests, find) holds; the server caps a larger limit to it.
const MaxPageLimit = 1000

// MaxAckIDs is the most ids one acknowledgement of dead letters (AckDead) takes.
const MaxAckIDs = 1000

// The states of a data request (Request.State), the values GET /api/v1/requests?state=
// takes.
const (
	RequestRegistered = "REGISTERED"
	RequestSent       = "SENT"
	RequestDone       = "DONE"
	RequestExpired    = "EXPIRED"
)
