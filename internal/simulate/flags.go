package simulate

import (
	"errors"
	"fmt"
	"time"
)

// Flags are msgx simulate's command-line values as given; RunOptions checks them and makes
// the run's options from them.
type Flags struct {
	Flights   int     // --flights: at least 1
	Speed     float64 // --speed: not negative
	Faults    string  // --faults: ParseFaults's list
	FaultRate float64 // --fault-rate: in (0, 0.5]
	Seed      int64   // --seed, when SeedSet
	SeedSet   bool    // false: the seed is drawn from Now (and printed with the report)
	Zone      string  // the airport's zone: --timezone, else sis.timezone
	Day       string  // --day YYYY-MM-DD; empty: today in Zone
	First     string  // --first HH:MM
	Hours     float64 // --hours: in (0, 24]
	Out       string  // --out DIR
	Server    bool    // a --server was given: it excludes Out
	Replace   bool    // --replace
	Now       time.Time
}

// RunOptions checks f, in the order msgx simulate says its problems, and returns the run's
// options: the day and its stream, Speed, Out and Replace (the caller sets Server, Warn and
// Progress). Its error is the problem as msgx simulate words it after its name.
func (f Flags) RunOptions() (RunOptions, error) {
	if f.Flights < 1 || f.Speed < 0 || f.Hours <= 0 || f.Hours > 24 || f.FaultRate <= 0 || f.FaultRate > 0.5 {
		return RunOptions{}, errors.New("--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]")
	}
	if f.Out != "" && f.Server {
		return RunOptions{}, errors.New("--server and --out exclude each other")
	}
	faults, err := ParseFaults(f.Faults)
	if err != nil {
		return RunOptions{}, err
	}
	loc, err := time.LoadLocation(f.Zone)
	if err != nil {
		return RunOptions{}, fmt.Errorf("--timezone %q is not a known time zone", f.Zone)
	}
	day := f.Now.In(loc)
	if f.Day != "" {
		if day, err = time.ParseInLocation(time.DateOnly, f.Day, loc); err != nil {
			return RunOptions{}, fmt.Errorf("--day %q is not a date (YYYY-MM-DD)", f.Day)
		}
	}
	first, err := time.Parse("15:04", f.First)
	if err != nil {
		return RunOptions{}, fmt.Errorf("--first %q is not a time of day (HH:MM)", f.First)
	}
	seed := f.Seed
	if !f.SeedSet {
		seed = f.Now.UnixNano() % 1_000_000
	}
	return RunOptions{Speed: f.Speed, Out: f.Out, Replace: f.Replace, Options: Options{
		Flights: f.Flights, Day: day, Loc: loc, Seed: seed, Faults: faults, FaultRate: f.FaultRate,
		First: time.Duration(first.Hour())*time.Hour + time.Duration(first.Minute())*time.Minute,
		Span:  time.Duration(f.Hours * float64(time.Hour)),
	}}, nil
}
