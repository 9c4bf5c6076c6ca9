package simulate

import (
	"testing"
	"time"
)

// RunOptions turns the command line into the run: the day in the zone (today there by
// default), the first time and the span, the seed drawn from the clock unless given; and it
// says the first problem in the order msgx simulate checks them.
func TestFlagsRunOptions(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 30, 0, 123456789, time.UTC) // 04:30 on the 2nd in Shanghai
	ok := Flags{Flights: 10, FaultRate: 0.01, Zone: "Asia/Shanghai", First: "06:15", Hours: 2.5, Faults: "orphan", Now: now}
	o, err := ok.RunOptions()
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Day.Format(time.DateOnly); got != "2026-12-02" || o.Loc.String() != "Asia/Shanghai" {
		t.Errorf("day %s in %s, want today in the zone: 2026-12-02 in Asia/Shanghai", got, o.Loc)
	}
	if o.First != 6*time.Hour+15*time.Minute || o.Span != 150*time.Minute || o.Seed != now.UnixNano()%1_000_000 ||
		len(o.Faults) != 1 || o.Faults[0] != Orphan || o.Flights != 10 {
		t.Errorf("options %+v", o.Options)
	}
	given := ok
	given.Seed, given.SeedSet, given.Day, given.Out, given.Replace, given.Speed = 0, true, "2026-07-04", "dir", true, 60
	if o, err := given.RunOptions(); err != nil || o.Seed != 0 || o.Day.Format(time.DateOnly) != "2026-07-04" || o.Out != "dir" || !o.Replace || o.Speed != 60 {
		t.Errorf("given seed 0, day, out, replace, speed: %+v, %v", o, err)
	}
	for _, c := range []struct {
		change func(*Flags)
		want   string
	}{
		{func(f *Flags) { f.Flights = 0 }, "--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]"},
		{func(f *Flags) { f.Hours = 24.5 }, "--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]"},
		{func(f *Flags) { f.FaultRate = 0.6; f.Out = "dir"; f.Server = true }, "--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]"},
		{func(f *Flags) { f.Out = "dir"; f.Server = true; f.Faults = "bad" }, "--server and --out exclude each other"},
		{func(f *Flags) { f.Faults = "orphn"; f.Zone = "Mars/Base" }, `unknown fault "orphn" (did you mean orphan?); faults are malformed, orphan, unknown-styp, duplicate-seqn, or all`},
		{func(f *Flags) { f.Zone = "Mars/Base"; f.Day = "x" }, `--timezone "Mars/Base" is not a known time zone`},
		{func(f *Flags) { f.Day = "2026-02-30"; f.First = "x" }, `--day "2026-02-30" is not a date (YYYY-MM-DD)`},
		{func(f *Flags) { f.First = "25:00" }, `--first "25:00" is not a time of day (HH:MM)`},
	} {
		f := ok
		c.change(&f)
		if _, err := f.RunOptions(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", f, err, c.want)
		}
	}
}
