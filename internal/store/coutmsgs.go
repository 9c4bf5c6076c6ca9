package store

// This file owns what msgx writes into the legacy outbound table COUTMSGS (docs/sis-format.md §4.2):
// one row per data request sent, which the legacy gateway reads, transmits to the AODB and
// marks with COUTMSGS_DATE_SENT. The table is the legacy's where it exists (the migration
// creates it only where it does not), so msgx writes only the columns the legacy writes: the
// XML, the insert time (airport local time in legacy.timezone, whole seconds, as every legacy
// datetime column), the ROUTINGID and the flags, all 0 (the legacy writes them so; a legacy
// table may have no defaults). The group columns stay NULL.

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// insertCoutmsgs writes one outbound message into COUTMSGS in tx and returns its id.
func (rt *RequestTracker) insertCoutmsgs(ctx context.Context, tx *sql.Tx, xml, routing string, now time.Time) (int64, error) {
	if rt.db.Intake.Shadow() {
		return 0, fmt.Errorf("%w: COUTMSGS is the legacy's", ErrShadow)
	}
	inserted := now.In(rt.db.Intake.legacyOpts().Location).Format("2006-01-02 15:04:05")
	rows, err := tx.QueryContext(ctx, `INSERT INTO COUTMSGS (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID,
		COUTMSGS_TRUEFALS_GROUP, COUTMSGS_FINAL_GROUP_IND, COUTMSGS_ACK_REQD, COUTMSGS_ACK_RESEND_TIMES, COUTMSGS_ENCRYPT, COUTMSGS_ERROR)
		VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0) RETURNING COUTMSGS_ID`, xml, inserted, routing)
	if err != nil {
		return 0, classifyWrite("insert COUTMSGS", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, classifyWrite("insert COUTMSGS", err)
		}
		return 0, Unavailable(fmt.Errorf("insert COUTMSGS: no id returned"))
	}
	var id int64
	if err := rows.Scan(&id); err != nil {
		return 0, Unavailable(fmt.Errorf("insert COUTMSGS: %w", err))
	}
	return id, nil
}

// Outbound is one COUTMSGS row as msgx reads it back (tests and tools).
type Outbound struct {
	ID       int64
	XML      string
	Routing  string
	Inserted *time.Time // COUTMSGS_DATE_INSERTED, read in legacy.timezone
	Sent     *time.Time // COUTMSGS_DATE_SENT, nil until the gateway sent it
	// Flags are TRUEFALS_GROUP, FINAL_GROUP_IND, ACK_REQD, ACK_RESEND_TIMES, ENCRYPT, ERROR.
	Flags [6]sql.NullInt64
}

// GetOutbound returns COUTMSGS row id, or nil when there is none.
func (rt *RequestTracker) GetOutbound(ctx context.Context, id int64) (*Outbound, error) {
	var o Outbound
	var xml sql.NullString
	var ins, sent NullTime
	err := rt.db.SQL.QueryRowContext(ctx, `SELECT COUTMSGS_ID, COUTMSGS_CLOB_MSG, ROUTINGID, COUTMSGS_DATE_INSERTED, COUTMSGS_DATE_SENT,
		COUTMSGS_TRUEFALS_GROUP, COUTMSGS_FINAL_GROUP_IND, COUTMSGS_ACK_REQD, COUTMSGS_ACK_RESEND_TIMES, COUTMSGS_ENCRYPT, COUTMSGS_ERROR
		FROM COUTMSGS WHERE COUTMSGS_ID = ?`, id).Scan(&o.ID, &xml, &o.Routing, &ins, &sent,
		&o.Flags[0], &o.Flags[1], &o.Flags[2], &o.Flags[3], &o.Flags[4], &o.Flags[5])
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("read COUTMSGS %d: %w", id, err))
	}
	o.XML, o.Inserted, o.Sent = xml.String, rt.db.Intake.LegacyTime(ins), rt.db.Intake.LegacyTime(sent)
	return &o, nil
}
