package store

// The dialect layer: every place where SQLite and MySQL/MariaDB need different SQL asks the
// Dialect here, so the queries themselves stay one text for both.

// ForUpdate is the suffix that locks the rows a SELECT reads until the transaction ends:
// "FOR UPDATE" on MySQL; nothing on SQLite, whose write transactions are serial already
// (msgx opens them IMMEDIATE).
func (d Dialect) ForUpdate() string {
	if d == MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// InsertIgnore is the INSERT that skips rows whose key already exists.
func (d Dialect) InsertIgnore() string {
	if d == MySQL {
		return "INSERT IGNORE"
	}
	return "INSERT OR IGNORE"
}
