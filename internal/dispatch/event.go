package dispatch

import "msgx/internal/store"

// Event is one MSG_EVENT row (the outbox belongs to package store).
type Event = store.Event
