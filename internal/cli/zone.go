package cli

import (
	"io"
	"text/tabwriter"
	"time"
)

// Zone is the zone the msgx command shows times in: the airport's (sis.timezone, which the
// server's GET /api/v1/me names), or UTC for scripts (--utc). Every time it writes names the
// zone, in the value or in the column's head. The zero Zone is UTC.
type Zone struct {
	Loc *time.Location
}

// UTC is the zone of --utc.
var UTC = Zone{Loc: time.UTC}

func (z Zone) loc() *time.Location {
	if z.Loc == nil {
		return time.UTC
	}
	return z.Loc
}

// Name is the zone's name: "Asia/Shanghai", "UTC".
func (z Zone) Name() string { return z.loc().String() }

// Time writes t in the zone, the zone named: "2026-12-03 15:10:00 Asia/Shanghai"; "-" for
// the zero time.
func (z Zone) Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return z.Cell(t) + " " + z.Name()
}

// Cell writes t in the zone without its name, for a table whose head names it
// (Head): "2026-12-03 15:10:00"; "-" for the zero time.
func (z Zone) Cell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(z.loc()).Format(time.DateTime)
}

// Head is a time column's head naming the zone: "created (Asia/Shanghai)".
func (z Zone) Head(name string) string { return name + " (" + z.Name() + ")" }

// TimeOf is Time of *t, "-" when t is nil.
func (z Zone) TimeOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return z.Time(*t)
}

// Table returns a writer that aligns tab-separated columns (text/tabwriter), two spaces
// apart; Flush writes the table.
func Table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}
