package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"msgx/internal/handler"
)

// WriteTable prints r for a person: the floor, then msgx's figures beside it as ratios.
func WriteTable(w io.Writer, r Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	p("msgx bench on %s (%s), workload %s: %d messages, %d clients, %g msg/s, %d finished messages before, %d delivery targets (%d copies)", r.Driver, r.Database, r.Workload, r.Messages, r.Clients, r.Rate, r.History, r.DeliveryTargets, r.CopyTargets)
	p("")
	p("floor: one connection, ~2 KB rows\t\t")
	p("  durable commits/s, 1 row each\t%.0f\tfloor_commits_per_s", r.FloorCommitsPerS)
	p("  rows/s, 100 rows per commit\t%.0f\tfloor_batched_rows_per_s", r.FloorBatchedRowsPerS)
	p("")
	p("msgx end to end\t\t")
	p("  accepted/s (durable answers)\t%.0f\taccepted_per_s\t%.2f× commit floor\t%.3f× batched floor",
		r.AcceptedPerS, r.AcceptedVsCommitFloor, r.AcceptedVsBatchedFloor)
	p("  processed/s (backlog → SUCCEEDED)\t%.0f\tprocessed_per_s\t%.2f× commit floor\t%.3f× batched floor",
		r.ProcessedPerS, r.ProcessedVsCommitFloor, r.ProcessedVsBatchedFloor)
	if r.Workload == WorkloadDay {
		writeDayLatency(p, r)
	} else {
		p("  accept→SENT p50, ms\t%.1f\taccept_to_sent_p50_ms\tat %.0f msg/s, SENT seen at the %s", r.AcceptToSentP50Ms, r.LatencyRatePerS, r.SentObserved)
		p("  accept→SENT p99, ms\t%.1f\taccept_to_sent_p99_ms", r.AcceptToSentP99Ms)
	}
	p("  %d-flight schedule (SCHD DNLD), s\t%.2f\tsnapshot_s", r.Flights, r.SnapshotS)
	if r.BoardMs > 0 {
		match := "equal to the live board"
		if !r.AsOfMatchesLive {
			match = "DIFFERS from the live board"
		}
		p("  live board refresh (%d flights), ms\t%.1f\tboard_ms", r.AsOfFlights, r.BoardMs)
		p("  board as of the backlog's end, ms\t%.1f\tas_of_first_ms\t%.2f× a live refresh\tfolded from %d messages, %s", r.AsOfFirstMs, r.AsOfFirstVsBoard, r.AsOfMessages, match)
		p("  board as of other past times, ms\t%.1f\tas_of_ms\t%.2f× a live refresh\tmedian of %d times within the backlog", r.AsOfMs, r.AsOfVsBoard, asOfRepeats)
	}
	writeWrites(p, r)
	p("  peak heap in use, MB\t%.1f\tpeak_heap_mb", r.PeakHeapMB)
	p("  pump start-up (adoption scan), s\t%.2f\tpump_start_s", r.PumpStartS)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.ProcessedPerS > 0 && r.LatencyRatePerS > r.ProcessedPerS {
		_, err := fmt.Fprintf(w, "\nnote: %.0f msg/s is above what msgx processed per second (%.0f): the backlog grew during the\n"+
			"latency phase, so accept→SENT is mostly time spent queued; try --rate below %.0f.\n",
			r.LatencyRatePerS, r.ProcessedPerS, r.ProcessedPerS)
		return err
	}
	return nil
}

// writeDayLatency prints the day workload's request→SENT percentiles, overall and per target.
func writeDayLatency(p func(string, ...any), r Result) {
	p("  request→SENT, all targets, ms\tp50 %.1f\taccept_to_sent_p50_ms\tat %.0f msg/s, SENT seen at the %s", r.AcceptToSentP50Ms, r.LatencyRatePerS, r.SentObserved)
	p("\tp99 %.1f\taccept_to_sent_p99_ms", r.AcceptToSentP99Ms)
	p("\tp999 %.1f\taccept_to_sent_p999_ms", r.AcceptToSentP999Ms)
	if e := r.EventTargets; e != nil {
		p("  request→SENT, event-by-event targets, ms\tp50 %.1f  p99 %.1f  p999 %.1f\tevent_targets\tall but %s: a message's last SENT there",
			e.P50Ms, e.P99Ms, e.P999Ms, handler.TargetSchd)
	}
	for _, t := range handler.Targets {
		l, ok := r.Targets[t]
		if !ok {
			continue
		}
		note := ""
		if t == handler.TargetSchd {
			note = fmt.Sprintf(", flushed every %.0f ms", r.SchdFlushPeriodMs)
		}
		p("    %s, ms\tp50 %.1f  p99 %.1f  p999 %.1f\ttargets.%s\t%d messages%s", t, l.P50Ms, l.P99Ms, l.P999Ms, t, l.Messages, note)
	}
	if st := r.Stages; st != nil {
		p("  its stages, event-by-event targets\t\t")
		for _, s := range []struct {
			name, key, what string
			l               TargetLatency
		}{
			{"accept", "accept", "request → inbox answer", st.Accept},
			{"process", "process", "inbox answer → pump commit", st.Process},
			{"deliver", "deliver", "pump commit → SENT commit, per target", st.Deliver},
			{"  of which send", "send", "pump commit → sink acknowledged", st.Send},
		} {
			p("    %s, ms\tp50 %.1f  p99 %.1f  p999 %.1f\tstages.%s\t%s", s.name, s.l.P50Ms, s.l.P99Ms, s.l.P999Ms, s.key, s.what)
		}
	}
}
