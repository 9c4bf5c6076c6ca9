package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	mysqldrv "github.com/go-sql-driver/mysql"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"msgx/internal/pipeline"
)

// The driver errors msgx tells apart. They are recognised by the driver's codes (MySQL error
// numbers, SQLite extended result codes), never by the text of the message.

// MySQL server error numbers (https://mariadb.com/kb/en/mariadb-error-codes/).
const (
	myDupEntry          = 1062 // ER_DUP_ENTRY
	myBadNull           = 1048 // ER_BAD_NULL_ERROR
	myTooLong           = 1406 // ER_DATA_TOO_LONG
	myTruncated         = 1265 // WARN_DATA_TRUNCATED
	myOutOfRange        = 1264 // ER_WARN_DATA_OUT_OF_RANGE
	myIncorrectString   = 1366 // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (Incorrect string value)
	myTruncatedWrong    = 1292 // ER_TRUNCATED_WRONG_VALUE (incorrect datetime/number)
	myNumOutOfRange     = 1690 // ER_DATA_OUT_OF_RANGE
	myInvalidCharString = 1300 // ER_INVALID_CHARACTER_STRING
	myCantAggregate     = 1267 // ER_CANT_AGGREGATE_2COLLATIONS
	myPacketTooLarge    = 1153 // ER_NET_PACKET_TOO_LARGE
	myWrongValueCount   = 1136 // a statement bug, but deterministic
	myIllegalValue      = 1367 // ER_ILLEGAL_VALUE_FOR_TYPE
	myIncorrectFnValue  = 1411 // ER_WRONG_VALUE_FOR_TYPE
	myInvalidJSON       = 3140 // ER_INVALID_JSON_TEXT
	myCheckFailed       = 4025 // ER_CONSTRAINT_FAILED (MariaDB CHECK)
	myBadField          = 1054 // ER_BAD_FIELD_ERROR: unknown column

	myDBAccessDenied       = 1044 // ER_DBACCESS_DENIED_ERROR: the user may not use that database
	myAccessDenied         = 1045 // ER_ACCESS_DENIED_ERROR: wrong user or password
	myBadDB                = 1049 // ER_BAD_DB_ERROR: unknown database
	myAccessDeniedNoPasswd = 1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR

	// ER_UNKNOWN_COM_ERROR, which a Galera node answers while it is not part of the primary
	// component ("WSREP has not yet prepared node for application use"): the node is alive
	// but must not be used.
	myNotReady = 1047
)

// IsNodeNotReady reports whether err is a Galera node refusing queries because it is not
// synced with the primary component (error 1047). It is an outage of that node, never a
// message's failure: it is not a data error, so a write that meets it is Unavailable
// (retried), and the connection to that node is given up so msgx moves to the next node
// (failover.go).
func IsNodeNotReady(err error) bool { return isMySQLError(err, myNotReady) }

// isMySQLError reports whether err is a MySQL server error with one of numbers.
func isMySQLError(err error, numbers ...uint16) bool {
	var me *mysqldrv.MySQLError
	return errors.As(err, &me) && slices.Contains(numbers, me.Number)
}

// IsConfigRefusal reports whether err is a MySQL server's refusal of the configured
// credentials or database: the configuration is wrong, the server is not down, so waiting for
// it would not help.
func IsConfigRefusal(err error) bool {
	return isMySQLError(err, myDBAccessDenied, myAccessDenied, myBadDB, myAccessDeniedNoPasswd)
}

// IsUniqueViolation reports whether err is a unique or primary-key violation.
func IsUniqueViolation(err error) bool {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number == myDupEntry
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// IsDataError reports whether the database refused a value (too long for its column, out of
// range, not valid in the column's character set, NULL where none is allowed): the same
// statement with the same values fails the same way every time, so it is the fault of the
// data, not of the database's availability.
func IsDataError(err error) bool {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case myBadNull, myTooLong, myTruncated, myOutOfRange, myIncorrectString, myTruncatedWrong,
			myNumOutOfRange, myInvalidCharString, myCantAggregate, myPacketTooLarge, myWrongValueCount,
			myIllegalValue, myIncorrectFnValue, myInvalidJSON, myCheckFailed:
			return true
		}
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_CONSTRAINT_NOTNULL,
			sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_RANGE:
			return true
		}
	}
	return false
}

// classifyWrite turns the error of a write done for one message into that message's failure:
// a data error is the message's own (CODEC_ERROR: the same values fail every time), anything
// else means the database is unavailable (INFRA, retried with backoff).
func classifyWrite(what string, err error) error {
	if err == nil {
		return nil
	}
	if IsDataError(err) {
		return pipeline.Wrap(pipeline.CodecError, fmt.Errorf("%s: the database refused a value: %w", what, err))
	}
	var pe *pipeline.Error
	if errors.As(err, &pe) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrFenced) {
		return err
	}
	return Unavailable(fmt.Errorf("%s: %w", what, err))
}

// Column widths of msgx's own text columns (characters; MySQL counts VARCHAR in characters).
const (
	IdentityWidth  = 160  // PROC_STATE.IDENTITY, IDENTITY_KEY
	TypeTagWidth   = 16   // PROC_STATE.TYPE_TAG, MSG_EVENT.TYPE_TAG
	LastErrorWidth = 4000 // PROC_STATE.LAST_ERROR, PUMP_JOB.LAST_ERROR (TEXT; kept readable)
	NoteWidth      = 1000 // PROC_STATE.NOTE (TEXT)
	WarningsWidth  = 8000 // PROC_STATE.WARNINGS (TEXT, a JSON array): at most this many runes
	WarningWidth   = 500  // one warning
)

// Fit makes s safe for a text column of width characters: invalid UTF-8 is replaced, and a
// longer text is cut at a character boundary with "…" as its last character, so the result
// has at most width characters. A width of 0 or less only repairs the encoding.
func Fit(s string, width int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == width-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// IdentityKey returns the value bound in the unique IDENTITY_KEY column for identity: the
// identity itself when it fits the column, else a digest of it, so two different long
// identities never collide on a cut prefix and the same one always maps to the same key.
func IdentityKey(identity string) string {
	if utf8.ValidString(identity) && utf8.RuneCountInString(identity) <= IdentityWidth {
		return identity
	}
	return digestKey(identity)
}

// digestKey is the IDENTITY_KEY of an identity too long for the column: "sha256:" and the
// hex digest (71 characters).
func digestKey(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ErrChanged is returned by the pump's writes when the message's row is no longer in the state
// the pump read (an operator replayed it, or another writer finished it): nothing was written,
// and the pump reads the row again instead of overwriting the newer state.
var ErrChanged = errors.New("the message changed since it was read")
