package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"msgx/client"
)

// BoardFilter keeps the flights of a board as the console's filters do: Movement A or D,
// Airline a carrier code or a prefix of the flight number, Terminal; "" keeps all.
type BoardFilter struct {
	Movement, Airline, Terminal string
}

// boardFlight is what a board shows of a flight record.
type boardFlight struct {
	FLID                         int64
	ALCD, FLNO, MVIN, TRML, STND string
	ACFT, RENO, FTSS, EXSC       string
	REMC, EXSR                   string
	SODT, ESTT, IEST, EOBT, TOBT time.Time
	ACTT, CNCL                   time.Time
	PSDT                         []struct{ PSST string }
	GTDT                         []struct{ GATE string }
	CLDT                         []struct{ BELT string }
	CHOT                         []struct {
		CHTM time.Time
		CHID string
	}
	FDIV *struct{ DDES, DDIR, TEXT string }
	DELY []struct {
		CODE string
		DURA int
	}
}

func (f BoardFilter) keeps(r boardFlight) bool {
	al := strings.ToUpper(strings.TrimSpace(f.Airline))
	return (f.Movement == "" || strings.EqualFold(r.MVIN, f.Movement)) && (f.Terminal == "" || r.TRML == f.Terminal) &&
		(al == "" || strings.ToUpper(r.ALCD) == al || strings.HasPrefix(strings.ToUpper(r.FLNO), al))
}

// WriteBoard writes the board as an aligned table: flight, A/D, scheduled, estimated, actual
// (HH:MM in z, with the date when it is not the board's day), terminal, stand, gate, belt,
// aircraft, status and remarks; statuses are the status codes' descriptions. It returns how
// many flights it showed.
func WriteBoard(w io.Writer, b client.Board, f BoardFilter, z Zone, statuses map[string]string) int {
	tw := Table(w)
	fmt.Fprintf(tw, "flight\tFLID\tA/D\t%s\testimated\tactual\tterminal\tstand\tgate\tbelt\taircraft\tstatus\tremarks\n", z.Head("scheduled"))
	hm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		lt := t.In(z.loc())
		if d := lt.Format(time.DateOnly); d != b.Day {
			return lt.Format("15:04 01-02")
		}
		return lt.Format("15:04")
	}
	n := 0
	for _, raw := range b.Flights {
		var r boardFlight
		if json.Unmarshal(raw, &r) != nil || !f.keeps(r) {
			continue
		}
		n++
		// The estimate: ESTT, else for an arrival IEST, for a departure EOBT, TOBT, then IEST.
		ests := []time.Time{r.ESTT, r.IEST}
		if r.MVIN != "A" {
			ests = []time.Time{r.ESTT, r.EOBT, r.TOBT, r.IEST}
		}
		var est time.Time
		for _, t := range ests {
			if !t.IsZero() {
				est = t
				break
			}
		}
		act := r.ACTT
		if act.IsZero() {
			want := "OFF"
			if r.MVIN == "A" {
				want = "ON"
			}
			for _, c := range r.CHOT {
				if strings.EqualFold(c.CHID, want) && !c.CHTM.IsZero() {
					act = c.CHTM
				}
			}
		}
		stand := r.STND
		if stand == "" {
			stand = joinOf(len(r.PSDT), func(i int) string { return r.PSDT[i].PSST })
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.FLNO, r.FLID, r.MVIN, hm(r.SODT), hm(est), hm(act),
			r.TRML, stand, joinOf(len(r.GTDT), func(i int) string { return r.GTDT[i].GATE }),
			joinOf(len(r.CLDT), func(i int) string { return r.CLDT[i].BELT }), strings.TrimSpace(r.ACFT+" "+r.RENO),
			boardStatus(r, statuses), OneLine(boardRemarks(r), 60))
	}
	tw.Flush()
	return n
}

func joinOf(n int, at func(int) string) string {
	var out []string
	for i := range n {
		if s := at(i); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func boardStatus(r boardFlight, statuses map[string]string) string {
	switch {
	case !r.CNCL.IsZero():
		return "CNL cancelled"
	case r.FDIV != nil && r.FDIV.DDES != "":
		return "DIV diverted to " + r.FDIV.DDES
	}
	code := r.FTSS
	if code == "" {
		code = r.EXSC
	}
	if d := statuses[code]; d != "" {
		return code + " " + d
	}
	return code
}

func boardRemarks(r boardFlight) string {
	out := []string{}
	for _, s := range []string{r.REMC, r.EXSR} {
		if s != "" {
			out = append(out, s)
		}
	}
	if r.FDIV != nil && r.FDIV.DDES != "" {
		dir := r.FDIV.DDIR
		if dir == "" {
			dir = "TO"
		}
		s := "diverted " + dir + " " + r.FDIV.DDES
		if r.FDIV.TEXT != "" {
			s += ": " + r.FDIV.TEXT
		}
		out = append(out, s)
	}
	for _, d := range r.DELY {
		s := "delay " + d.CODE
		if d.DURA != 0 {
			s += fmt.Sprintf(" %d min", d.DURA)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// BoardPath is the API's path of the board of the airport day day (today at the airport when
// "") or, with asOf, of the board as it stood then (in UTC with utc): what client.Board and
// client.BoardAsOf ask, for the command's --json and its table alike.
func BoardPath(day, asOf string, utc bool) string {
	q := url.Values{}
	if day != "" {
		q.Set("day", day)
	}
	if asOf != "" {
		q.Set("as_of", asOf)
		if utc {
			q.Set("tz", "UTC")
		}
	}
	if len(q) == 0 {
		return "/api/v1/flights"
	}
	return "/api/v1/flights?" + q.Encode()
}

// UntilInterrupt is ctx until the process is interrupted (SIGINT, Ctrl-C) or told to stop
// (SIGTERM): what a command that runs until Ctrl-C works under. stop ends the watch.
func UntilInterrupt(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
}

// Watch writes the text draw makes to w, again every every until ctx ends or the process
// is interrupted (UntilInterrupt): in place on a
// terminal (home and clear), else one text after another with a blank line between, as
// piped output keeps them. An error of the first draw ends it; a later one is said instead
// of the text, and the next draw tries again.
func Watch(ctx context.Context, w io.Writer, every time.Duration, draw func() (string, error)) error {
	ctx, stop := UntilInterrupt(ctx)
	defer stop()
	onTerminal := IsTerminal(w)
	for first := true; ; first = false {
		text, err := draw()
		switch {
		case err != nil && first:
			return err
		case err != nil:
			text = fmt.Sprintf("could not refresh (%v); trying again in %s\n", err, every)
		}
		if onTerminal {
			fmt.Fprint(w, "\x1b[H\x1b[2J") // home and clear: the text redraws in place
		} else if !first {
			fmt.Fprintln(w)
		}
		fmt.Fprint(w, text)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}
