package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"msgx/client"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The msgx command's text for the typed answers: the status, a flight's changes, a job.

// WriteStatus writes the status as msgx status prints it: first what stops work, one line
// each (Alarms, ages taken at now), then the pump, counts, the head, dead letters, recent
// problems, targets, the pump's trouble, jobs, then every other section. Times are in z.
func WriteStatus(w io.Writer, st client.Status, now time.Time, z Zone) {
	for _, line := range Alarms(st, now, z) {
		fmt.Fprintln(w, line)
	}
	st.Extra = maps.Clone(st.Extra) // its sections are taken out as they are written
	delete(st.Extra, "pump_halted") // said above
	fmt.Fprintf(w, "pump running: %v", st.PumpRunning)
	if st.LeaseHolder != "" {
		fmt.Fprintf(w, " (lease: %s)", st.LeaseHolder)
	}
	fmt.Fprintln(w)
	for _, s := range []string{"PENDING", "FAILED", "SUCCEEDED", "SKIPPED", "DEAD"} {
		fmt.Fprintf(w, "%-10s %d\n", s, st.Counts[s])
	}
	writeHead(w, st)
	var recent []client.RecentNote
	var dead client.DeadCounts
	if _, ok, err := takeSection(st.Extra, "dead", &dead); ok && err == nil && (dead.Messages.Dead > 0 || dead.Events.Dead > 0) {
		fmt.Fprintf(w, "dead letters to look at: %d messages, %d events (acknowledged, kept for audit: %d, %d)\n",
			dead.Messages.Unacknowledged, dead.Events.Unacknowledged, dead.Messages.Acknowledged, dead.Events.Acknowledged)
	}
	if _, ok, err := takeSection(st.Extra, "recent", &recent); ok && err == nil && len(recent) > 0 {
		fmt.Fprintf(w, "recent problems and operator actions (newest first, times %s):\n", z.Name())
		for _, n := range recent {
			if n.Kind == "action" {
				fmt.Fprintf(w, "  %s %s by %s on %s\n", z.Cell(n.At), n.Note, n.Actor, n.Subject)
				continue
			}
			fmt.Fprintf(w, "  %s message %d %s %s %s\n", z.Cell(n.At), n.MsgID, n.TypeTag, n.State, n.Class)
			if n.Note != "" {
				fmt.Fprintf(w, "    %s\n", n.Note)
			}
		}
	}
	var targets []client.TargetStatus
	if raw, ok, err := takeSection(st.Extra, "targets", &targets); ok {
		writeTargets(w, raw, targets, err, z)
	}
	var tr *client.PumpTrouble
	if _, ok, err := takeSection(st.Extra, "pump_trouble", &tr); ok && err == nil && tr != nil {
		fmt.Fprintf(w, "pump: cannot record the outcome of message %d: %d failure(s) since %s, next try %s\n  error: %s\n",
			tr.MsgID, tr.Failures, z.Time(tr.Since), z.Time(tr.Next), tr.LastError)
	}
	writeJobs(w, st.Extra, z)
	keys := make([]string, 0, len(st.Extra))
	for k := range st.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s: %s\n", k, st.Extra[k])
	}
}

// Alarms are the lines msgx status starts with, what stops work: "HALTED: REASON" while the
// pump is halted, "PAUSED for 1 h 12 min by NAME: REASON" while it is paused, and a line per
// paused target ("target KAFKA_FLOP PAUSED for 10 min by NAME: REASON"); none when all runs.
// Ages are taken at now, times written in z.
func Alarms(st client.Status, now time.Time, z Zone) []string {
	var out []string
	if h := st.Halted(); h != nil {
		line := "HALTED: " + h.Reason
		if !h.Since.IsZero() {
			line += fmt.Sprintf(" (for %s, since %s)", Age(now.Sub(h.Since)), z.Time(h.Since))
		}
		out = append(out, line)
	}
	var targets []string
	for _, p := range st.Paused {
		reason := p.Reason
		if reason == "" {
			reason = "no reason given"
		}
		what, resume := "", "msgx resume"
		if t, ok := strings.CutPrefix(p.Name, "target:"); ok {
			what, resume = "target "+t+" ", "msgx resume --target "+t
		}
		line := fmt.Sprintf("%sPAUSED for %s by %s: %s (since %s; %s)", what, Age(now.Sub(p.At)), p.By, reason, z.Time(p.At), resume)
		if what == "" {
			out = append(out, line)
		} else {
			targets = append(targets, line)
		}
	}
	return append(out, targets...)
}

// Age writes d as an operator reads it: "45 s", "12 min", "1 h 12 min", "3 d 4 h".
func Age(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, h)
}

// takeSection takes the status section key out of extra and decodes it into v; ok is false
// when the status has no such section.
func takeSection(extra map[string]json.RawMessage, key string, v any) (raw json.RawMessage, ok bool, err error) {
	if raw, ok = extra[key]; !ok {
		return nil, false, nil
	}
	delete(extra, key)
	return raw, true, json.Unmarshal(raw, v)
}

// writeHead writes the status's head message and why it waits.
func writeHead(w io.Writer, st client.Status) {
	if st.Head == nil {
		fmt.Fprintln(w, "head: none (nothing waiting)")
		return
	}
	tag := "?"
	if st.Head.TypeTag != nil {
		tag = *st.Head.TypeTag
	}
	fmt.Fprintf(w, "head: message %d %s %s, attempts %d\n  why: %s\n", st.Head.ID, tag, st.Head.State, st.Head.Attempts, st.Head.Why)
	for _, warning := range st.Head.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
}

// writeTargets writes the status's delivery targets (raw when they could not be read: err).
func writeTargets(w io.Writer, raw json.RawMessage, targets []client.TargetStatus, err error, z Zone) {
	if err != nil {
		fmt.Fprintf(w, "targets: %s\n", raw)
		return
	}
	if len(targets) == 0 {
		fmt.Fprintln(w, "targets: no events yet")
		return
	}
	fmt.Fprintf(w, "%-14s %8s %6s %8s %s\n", "target", "pending", "dead", "sent", "oldest pending")
	for _, t := range targets {
		age := "-"
		if t.Pending > 0 {
			age = (time.Duration(t.AgeSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "%-14s %8d %6d %8d %s\n", t.Target, t.Pending, t.Dead, t.Sent, age)
		switch {
		case t.BlockedSince != nil && t.Head != nil:
			fmt.Fprintf(w, "  BLOCKED since %s (%s), head event %d, %d attempt(s), next attempt %s, %s: %s\n",
				z.Time(*t.BlockedSince), time.Since(*t.BlockedSince).Round(time.Second), t.Head.EventID,
				t.Head.Attempts, z.TimeOf(t.NextAttempt), OrText(t.ErrorClass, "?"), OrText(t.LastError, ""))
		case t.Head != nil && t.Head.LastError != nil:
			fmt.Fprintf(w, "  head event %d, %d attempt(s): %s\n", t.Head.EventID, t.Head.Attempts, *t.Head.LastError)
		}
		if t.Rejecting {
			fmt.Fprintf(w, "  REJECTING: its latest events all went DEAD, none delivered since; see msgx events --state DEAD --target %s\n", t.Target)
		}
	}
}

// writeJobs writes, for msgx status, the job in hand and the last job of each kind, and takes
// their sections out of extra.
func writeJobs(w io.Writer, extra map[string]json.RawMessage, z Zone) {
	var j *client.JobInHand
	if _, ok, err := takeSection(extra, "job", &j); ok && err == nil && j != nil {
		fmt.Fprintf(w, "job in hand: %s (job %d) for %s: %s\n", j.Kind, j.JobID, j.RunningFor, j.Doing)
	}
	var h *client.MessageInHand
	if _, ok, err := takeSection(extra, "in_hand", &h); ok && err == nil && h != nil {
		fmt.Fprintf(w, "message in hand: %d %s for %s: %s\n", h.MsgID, h.Tag, h.RunningFor, h.Doing)
	}
	var list []client.Job
	if _, ok, err := takeSection(extra, "last_jobs", &list); !ok || err != nil || len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "last jobs (times %s):\n", z.Name())
	for _, j := range list {
		what := ""
		switch {
		case j.Result != nil:
			what = *j.Result
		case j.LastError != nil:
			what = *j.LastError
		}
		when := z.Cell(j.CreatedAt)
		if j.FinishedAt != nil {
			when = z.Cell(*j.FinishedAt)
		}
		fmt.Fprintf(w, "  %-13s job %d %s %s: %s\n", j.Kind, j.ID, j.State, when, what)
	}
}

// WriteChange writes a field's old and new value in full: on one line when both are short,
// else each on a line of its own (two long values that differ only at the end must not look
// the same).
func WriteChange(w io.Writer, field, old, cur string) {
	o, n := old, cur // JSON: a line each, as stored
	if len([]rune(o)) <= 60 && len([]rune(n)) <= 60 {
		fmt.Fprintf(w, "    %-6s %s → %s\n", field, o, n)
		return
	}
	fmt.Fprintf(w, "    %-6s old: %s\n    %-6s new: %s\n", field, o, "", n)
}

// JobState is a job's state, RUNNING while it runs.
func JobState(j client.Job) string {
	if j.Progress != nil {
		return "RUNNING"
	}
	return j.State
}

// JobText is what a job did (its result), why it failed, or, while it runs, what it is doing.
func JobText(j client.Job) string {
	switch {
	case j.Progress != nil:
		return fmt.Sprintf("%s (for %s)", j.Progress.Doing, time.Duration(j.Progress.RunningSeconds*float64(time.Second)).Round(time.Second))
	case j.LastError != nil && *j.LastError != "":
		return *j.LastError
	}
	return OrText(j.Result, "")
}

// OrText is *s, or def when s is nil or empty.
func OrText(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

// WriteMessage writes one message as msgx message prints it: state, class, identity, times,
// last error, note, warnings and the data request it answered; times in z.
func WriteMessage(w io.Writer, m client.Message, z Zone) {
	fmt.Fprintf(w, "message %d: %s %s, attempts %d\n", m.ID, OrText(m.TypeTag, "?"), m.State, m.Attempts)
	if m.ErrorClass != nil {
		fmt.Fprintf(w, "class:      %s\n", *m.ErrorClass)
	}
	if m.Identity != nil {
		fmt.Fprintf(w, "identity:   %s\n", *m.Identity)
	}
	if m.ReceivedAt != nil {
		fmt.Fprintf(w, "received:   %s\n", z.Time(*m.ReceivedAt))
	}
	if m.ProcessedAt != nil {
		fmt.Fprintf(w, "processed:  %s\n", z.Time(*m.ProcessedAt))
	}
	if m.LastError != nil {
		fmt.Fprintf(w, "last error: %s\n", *m.LastError)
	}
	if m.Note != "" {
		fmt.Fprintf(w, "note:       %s\n", m.Note)
	}
	for _, warning := range m.Warnings {
		fmt.Fprintf(w, "warning:    %s\n", warning)
	}
	if m.AnsweredRequest != nil {
		fmt.Fprintf(w, "answered:   data request %d (msgx requests)\n", *m.AnsweredRequest)
	}
}

// WriteHistory writes a message's history: each attempt, park and replay, with who did it;
// times in z.
func WriteHistory(w io.Writer, history []client.HistoryEntry, z Zone) {
	fmt.Fprintf(w, "history (times %s):\n", z.Name())
	if len(history) == 0 {
		fmt.Fprintln(w, "  (nothing recorded)")
	}
	for _, e := range history {
		who := ""
		if e.Actor != "" {
			who = " by " + e.Actor
		}
		fmt.Fprintf(w, "  %s  %-9s %-11s attempts %d%s: %s\n", z.Cell(e.At), e.State, OrText(e.Class, "-"), e.Attempts, who, OneLine(e.Detail, 160))
	}
}

// WriteJob writes one job: its state, attempts, times (in z) and result, error or progress.
func WriteJob(w io.Writer, j client.Job, z Zone) {
	fmt.Fprintf(w, "job %d %s: %s, %d attempt(s), after message %d, created %s\n", j.ID, j.Kind, JobState(j), j.Attempts, j.AfterMsgID, z.Time(j.CreatedAt))
	if j.FinishedAt != nil {
		fmt.Fprintf(w, "finished %s\n", z.Time(*j.FinishedAt))
	}
	if t := JobText(j); t != "" {
		fmt.Fprintln(w, t)
	}
}

// WritePreview writes a replay's dry run as a table (id, tag or target / tag, class, age),
// and how many more would move than it shows.
func WritePreview(w io.Writer, res client.ReplayAnswer, events bool) {
	if len(res.Items) == 0 {
		return
	}
	what := "tag"
	if events {
		what = "target / tag"
	}
	fmt.Fprintf(w, "%10s  %-28s  %-12s  %s\n", "id", what, "class", "age")
	for _, it := range res.Items {
		label := it.Tag
		if events {
			label = it.Target + " / " + it.Tag
		}
		age := (time.Duration(it.AgeSeconds) * time.Second).String()
		fmt.Fprintf(w, "%10d  %-28s  %-12s  %s\n", it.ID, OrDash(label), OrDash(it.Class), age)
		if it.Fails != "" {
			fmt.Fprintf(w, "%10s  would fail: %s\n", "", OneLine(it.Fails, 200))
		}
		if len(it.Sets) > 0 {
			fmt.Fprintf(w, "%10s  would set: %s\n", "", strings.Join(it.Sets, ", "))
		}
		for _, l := range it.Leaves {
			fmt.Fprintf(w, "%10s  would leave: %s\n", "", l)
		}
	}
	if more := res.Moved - len(res.Items); more > 0 {
		fmt.Fprintf(w, "… and %d more (the table shows the first %d)\n", more, len(res.Items))
	}
}

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OneLine returns s on one line, cut to n characters.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// WithFilters adds to q each name and value of kv whose value is not "", and encodes it.
func WithFilters(q url.Values, kv ...string) string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q.Encode()
}

// NonZero is n in decimal, "" for 0.
func NonZero(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// WriteMessageHeader writes the header of the message lines WriteMessageLine writes.
func WriteMessageHeader(w io.Writer) {
	fmt.Fprintf(w, "%8s  %-9s  %-11s  %-10s  %s\n", "id", "state", "class", "type", "note / last error")
}

// WriteMessageLine writes one message as a line: id, state, class, type tag, then its note
// or last error and how many warnings it has.
func WriteMessageLine(w io.Writer, m client.Message) {
	text := m.Note
	if m.State == "FAILED" || m.State == "DEAD" || m.State == "SKIPPED" {
		text = OrText(m.LastError, m.Note)
	}
	if len(m.Warnings) > 0 {
		text += fmt.Sprintf(" [%d warning(s)]", len(m.Warnings))
	}
	fmt.Fprintf(w, "%8d  %-9s  %-11s  %-10s  %s\n", m.ID, m.State, OrText(m.ErrorClass, "-"), OrText(m.TypeTag, "?"), OneLine(text, 120))
}

// WriteHits writes find's hits as an aligned table (kind, id, day, match, what) and returns
// the ids of the flights among them.
func WriteHits(w io.Writer, ans client.FindAnswer) (flights []int64) {
	tw := Table(w)
	fmt.Fprintln(tw, "kind\tid\tday\tmatch\twhat")
	for _, h := range ans.Hits {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", h.Kind, h.ID, OrDash(h.Day), h.Match, h.Label)
		if h.Kind == "flight" {
			flights = append(flights, h.ID)
		}
	}
	tw.Flush()
	return flights
}

// WriteRequests writes data requests as an aligned table: id, type, what, state, SEQN,
// re-sends, when sent (or how long it waits for the gateway), when finished (in z) and the
// answering message.
func WriteRequests(w io.Writer, requests []client.Request, z Zone) {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return z.Cell(*t)
	}
	tw := Table(w)
	fmt.Fprintf(tw, "id\ttype\twhat\tstate\tseqn\tresends\t%s\t%s\tanswer\n", z.Head("sent"), z.Head("finished"))
	for _, r := range requests {
		what := r.STYP
		if r.Type == "RQFD" {
			what = r.STDB + " " + r.STDE
		}
		answer := "-"
		if r.AnswerID != nil {
			answer = "message " + strconv.FormatInt(*r.AnswerID, 10)
		}
		sent := at(r.SentAt)
		if r.WaitingForGateway != nil {
			// Not sent by the gateway yet: never re-sent while so.
			sent = "waiting for gateway " + (time.Duration(*r.WaitingForGateway) * time.Second).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, r.Type, OrDash(strings.TrimSpace(what)), r.State, OrDash(r.SEQN), r.Resends,
			sent, at(r.FinishedAt), answer)
	}
	tw.Flush()
}

// WriteJSON writes v as indented JSON, as a command's --json prints an answer.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
