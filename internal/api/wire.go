package api

import (
	"context"

	"msgx/client"
	"msgx/internal/store"
)

// The edge: the store's values as the API answers them, in the wire types of package client.

// message is m as the API answers it.
func message(m *store.Message) client.Message {
	return client.Message{ID: m.ID, State: string(m.State), ErrorClass: m.ErrorClass, Attempts: m.Attempts, LastError: m.LastError,
		TypeTag: m.TypeTag, Identity: m.Identity, ReceivedAt: m.ReceivedAt, ProcessedAt: m.ProcessedAt,
		NextAttemptAt: m.NextAttemptAt, FirstFailedAt: m.FirstFailedAt, Note: m.Note, Warnings: m.Warnings,
		TraceID: m.TraceID, AnsweredRequest: m.AnsweredRequest}
}

// messages is ms as the API answers them (nil stays nil).
func messages(ms []*store.Message) []client.Message {
	if ms == nil {
		return nil
	}
	out := make([]client.Message, len(ms))
	for i, m := range ms {
		out[i] = message(m)
	}
	return out
}

// jobRow is j as the API answers it.
func jobRow(j *store.Job) client.JobRow {
	return client.JobRow{ID: j.ID, Kind: j.Kind, AfterMsgID: j.AfterMsgID, Params: j.Params, State: j.State, Attempts: j.Attempts,
		NextAttemptAt: j.NextAttemptAt, FirstFailedAt: j.FirstFailedAt, LastError: j.LastError, Result: j.Result,
		CreatedAt: j.CreatedAt, FinishedAt: j.FinishedAt, ScheduleKey: j.ScheduleKey}
}

// jobInfo is j as the jobs' answers show it: with cur's progress when cur is j.
func jobInfo(j *store.Job, cur *client.JobProgress) client.Job {
	if cur != nil && cur.JobID == j.ID {
		return client.Job{JobRow: jobRow(j), Progress: cur}
	}
	return client.Job{JobRow: jobRow(j)}
}

// LastJobs is the status section "last_jobs": the newest job of each kind, with its result.
func LastJobs(db store.Jobs) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		list, err := db.ListJobs(ctx, 50)
		if err != nil {
			return nil, err
		}
		out := []client.JobRow{}
		seen := map[string]bool{}
		for _, j := range list {
			if !seen[j.Kind] {
				seen[j.Kind] = true
				out = append(out, jobRow(j))
			}
		}
		return out, nil
	}
}

// pauseOf is p as the API answers it (nil stays nil).
func pauseOf(p *store.Pause) *client.Pause {
	if p == nil {
		return nil
	}
	return new(client.Pause(*p))
}

// pauses is ps as the API answers them (nil stays nil).
func pauses(ps []store.Pause) []client.Pause {
	if ps == nil {
		return nil
	}
	out := make([]client.Pause, len(ps))
	for i, p := range ps {
		out[i] = client.Pause(p)
	}
	return out
}

// history is h as the API answers it.
func history(h []store.HistoryEntry) []client.HistoryEntry {
	if h == nil {
		return nil
	}
	out := make([]client.HistoryEntry, len(h))
	for i, e := range h {
		out[i] = client.HistoryEntry(e)
	}
	return out
}

// auditEntries is as as the API answers them.
func auditEntries(as []store.AuditEntry) []client.AuditEntry {
	if as == nil {
		return nil
	}
	out := make([]client.AuditEntry, len(as))
	for i, a := range as {
		out[i] = client.AuditEntry(a)
	}
	return out
}

// refEntry is e as the API answers it.
func refEntry(e *store.RefEntry) client.RefEntry { return client.RefEntry(*e) }

// refEntries is es as the API answers them.
func refEntries(es []store.RefEntry) []client.RefEntry {
	if es == nil {
		return nil
	}
	out := make([]client.RefEntry, len(es))
	for i, e := range es {
		out[i] = client.RefEntry(e)
	}
	return out
}

// DeadCounts is c as the API answers it (the dead letters' answer and the status's section).
func DeadCounts(c store.DeadCounts) client.DeadCounts {
	return client.DeadCounts{Messages: client.DeadCount(c.Messages), Events: client.DeadCount(c.Events)}
}

// acks is as as the API answers them.
func acks(as []store.Ack) []client.Ack {
	if as == nil {
		return nil
	}
	out := make([]client.Ack, len(as))
	for i, a := range as {
		out[i] = client.Ack(a)
	}
	return out
}

// parked is a park's result as the API answers it.
func parked(r store.ParkResult) client.ParkAnswer {
	return client.ParkAnswer{ID: r.ID, From: string(r.From), State: string(r.State), Class: string(r.Class)}
}

// events is es as the listings answer them (nil stays nil); each row is store.Event's Wire,
// which the status's targets section answers a target's head with too.
func (s *Server) events(es []store.EventBrief) []client.Event {
	if es == nil {
		return nil
	}
	out := make([]client.Event, len(es))
	for i := range es {
		e := es[i].Event
		e.Render(s.Families)
		out[i] = client.Event{EventRow: e.Wire(), PayloadBytes: es[i].PayloadBytes, PayloadElided: es[i].PayloadElided}
	}
	return out
}

// flightChanges is cs as a flight's history answers them.
func flightChanges(cs []store.FlightChange) []client.FlightChange {
	out := make([]client.FlightChange, len(cs))
	for i, c := range cs {
		out[i] = client.FlightChange(c)
	}
	return out
}

// Problems is ps as the API answers them (the problems' listing and the status's section).
func Problems(ps []store.Problem) []client.RecentNote {
	if ps == nil {
		return nil
	}
	out := make([]client.RecentNote, len(ps))
	for i, p := range ps {
		out[i] = client.RecentNote(p)
	}
	return out
}
