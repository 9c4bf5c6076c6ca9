package pipeline

import (
	"encoding/json"
	"strings"
)

// Identity is the idempotency key of a message: SNDR|TYPE|STYP|SEQN, and the sender's day
// (the date part of META/DTTM, yyyyMMdd) appended when includeDay is set. It is bound once,
// in the same transaction as the message's effects; a later message with the same identity is
// SKIPPED. In IdentityContent mode a message whose key is held by a message with other
// content binds ContentIdentity instead.
func Identity(sndr, typ, styp, seqn, day string, includeDay bool) string {
	parts := []string{sndr, typ, styp, seqn}
	if includeDay {
		parts = append(parts, day)
	}
	return strings.Join(parts, "|")
}

// IdentityMode is how the pump tells a duplicate from a new message (config identity.mode).
type IdentityMode string

// The identity modes.
const (
	// IdentityContent (the default): a duplicate is the same message sent again. The identity
	// is SNDR|TYPE|STYP|SEQN while no other message holds it; a message with the SEQN of an
	// earlier one is a duplicate only when its canonical content (sis.ContentDigest: META
	// DTTM, layout and attribute order left out) is the same, and otherwise binds
	// ContentIdentity. Real AODBs reuse SEQN, so this never skips a different message.
	IdentityContent IdentityMode = "content"
	// IdentitySeqn: SNDR|TYPE|STYP|SEQN alone; any later message with it is a duplicate. Only
	// for an AODB that guarantees unique SEQNs.
	IdentitySeqn IdentityMode = "seqn"
	// IdentitySeqnDay: SNDR|TYPE|STYP|SEQN|yyyyMMdd (the sender's day of META DTTM): for an
	// AODB that guarantees unique SEQNs within a day.
	IdentitySeqnDay IdentityMode = "seqn-day"
)

// ParseIdentityMode returns the mode named s, and whether s names one.
func ParseIdentityMode(s string) (IdentityMode, bool) {
	switch m := IdentityMode(s); m {
	case IdentityContent, IdentitySeqn, IdentitySeqnDay:
		return m, true
	}
	return "", false
}

// ByContent reports whether m tells duplicates by content (IdentityContent, the zero mode).
func (m IdentityMode) ByContent() bool { return m == IdentityContent || m == "" }

// Key is the identity a message binds first in mode m: SNDR|TYPE|STYP|SEQN, with the sender's
// day in IdentitySeqnDay. The zero mode is IdentityContent.
func (m IdentityMode) Key(sndr, typ, styp, seqn, day string) string {
	return Identity(sndr, typ, styp, seqn, day, m == IdentitySeqnDay)
}

// ContentIdentity is the identity of a message whose key is held by a message with other
// content (IdentityContent): the key and the digest of its own canonical content.
func ContentIdentity(key, digest string) string { return key + "|#" + digest }

// Decision is what a handler decides for one message; the pump applies it in one transaction
// together with the identity bind and the SUCCEEDED state. An empty Decision is a success that
// changes nothing.
type Decision struct {
	Ref     []RefChange   // reference-data changes, applied all or none
	Flights []FlightWrite // flight-store writes, applied all or none
	Events  []Event       // outbox rows (MSG_EVENT), inserted in this order
	Note    string        // what was done, for the log line and the message's note ("3 records, 1 unchanged")
	// Warnings are what the handler noticed but applied anyway (an invalid FLTR left out of
	// a snapshot, a RECS mismatch); they are stored with the message and shown by the API.
	Warnings []string `json:",omitempty"`
	// Kept are what a message decided out of its inbox order left as a later message set it
	// ("flight 5001 STND kept: set by message 3, newer"); the note names them too.
	Kept []string `json:",omitempty"`
}

// Empty reports whether d changes nothing.
func (d Decision) Empty() bool { return len(d.Ref) == 0 && len(d.Flights) == 0 && len(d.Events) == 0 }

// RefOp is the kind of a reference-data change.
type RefOp string

// Reference-data operations.
const (
	RefUpsert  RefOp = "UPSERT"  // insert or update one record; unchanged fields change nothing
	RefDelete  RefOp = "DELETE"  // delete one record by key; absent is a no-op
	RefReplace RefOp = "REPLACE" // the records given become the whole TYPE
)

// RefRecord is one reference record: its key within its TYPE and its fields as a JSON object.
type RefRecord struct {
	Key    string
	Fields json.RawMessage
}

// RefChange is one change to REF_DATA. Upsert and Delete use Record; Replace uses Records
// (and refuses an empty list unless AllowEmpty).
type RefChange struct {
	Op         RefOp
	Type       string
	Record     RefRecord
	Records    []RefRecord
	AllowEmpty bool
	// Keep lists keys a Replace must leave as stored (records of the message that were
	// invalid): they are neither written nor deleted.
	Keep []string `json:",omitempty"`
	// NoDelete makes a Replace an upsert of Records that deletes nothing (an invalid record
	// whose key could not be read might be any stored record).
	NoDelete bool `json:",omitempty"`
}

// FlightWrite is one write to the flight store: the whole record after the change, or a
// delete. Day is the flight's local operation day (YYYY-MM-DD).
type FlightWrite struct {
	Day    string
	FLID   int64
	Record json.RawMessage
	Delete bool
}

// Event is one outbox row the pump inserts into MSG_EVENT. The dispatcher wraps Payload in the
// delivery envelope (event_id, msg_id, type_tag, target, flight key) when it sends it.
type Event struct {
	Target  string          // delivery target, e.g. KAFKA_FLOP
	Kind    string          // payload kind, e.g. flop, schd, notify, es-upsert, es-delete
	Key     string          // flight key (FLID) where there is one; the partition/document key
	Payload json.RawMessage // the event body
}
