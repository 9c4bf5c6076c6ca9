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
