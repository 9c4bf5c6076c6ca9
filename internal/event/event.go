// Package event holds the canonical event of one changed flight (FlightChange), its versioned
// encoding (Encode, Decode) and the pure renderers that write each delivery target's payload
// from it (Flop, Schd, Notify, ES), in the bytes docs/payloads.md describes. It is a leaf: the
// handler builds a FlightChange from a flight's stored record and its record after a message,
// and renders the four payloads from it; nothing here reads or writes anything.
package event

import (
	"encoding/json"
	"time"
)

// Version is the schema version of the encoding Encode writes and Decode reads ("v").
const Version = 1

// Op is what happened to the flight.
type Op string

// The three operations of a flight change.
const (
	Insert Op = "insert" // the flight was not stored before
	Update Op = "update" // the flight was stored and is still
	Delete Op = "delete" // the flight was stored and is gone
)

// valid reports whether op is one of the three operations.
func (op Op) valid() bool { return op == Insert || op == Update || op == Delete }

// Change is one changed top-level field of a flight record: its key and its old and new
// values as JSON text (null where the record lacks the field; an empty value counts as null).
type Change struct {
	Key      string
	Old, New json.RawMessage
}

// Window is the schedule window a snapshot names (its notification's scheduleStart and
// scheduleEnd). The renderers and Encode write it in UTC.
type Window struct{ From, To time.Time }

// FlightChange is the canonical event of one changed flight: everything the four payloads
// of the flight are rendered from.
type FlightChange struct {
	FLID int64
	Op   Op
	// Changes are the changed fields, sorted by key (byte order): the order the KAFKA_FLOP
	// payload and the update notification write them in.
	Changes []Change
	// Record is the flight's record after the change, or before it for a Delete: a JSON
	// object (the handler's canonical encoding of the record).
	Record json.RawMessage
	// Schedule is set when a schedule message changed the flight: its notification (an
	// insert or update) is of type "schedule" and names Window, when there is one.
	Schedule bool
	Window   *Window
}
