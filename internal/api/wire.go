package api

import (
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
