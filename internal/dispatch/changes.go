package dispatch

import (
	"bytes"
	"sync"

	"msgx/internal/event"
)

// changes holds the flight changes the targets render (event.Decode of a stored canonical
// event), by event id: the targets that take a shared event read the same bytes, and decode
// them once between them instead of once each (Decode checks the record it carries, which is
// most of a render's cost). It keeps the last changeCacheSize ids; a change's bytes are checked
// against those it was decoded from, so an id whose row holds other bytes is decoded anew.
type changes struct {
	mu   sync.Mutex
	byID map[int64]cachedChange
	ring []int64 // the ids held, oldest replaced first
	next int
}

type cachedChange struct {
	raw []byte
	c   *event.FlightChange
}

// changeCacheSize bounds the changes held: a few rounds of every target's runs.
const changeCacheSize = 1024

func newChanges() *changes {
	return &changes{byID: make(map[int64]cachedChange, changeCacheSize), ring: make([]int64, 0, changeCacheSize)}
}

// decode returns the change event id's stored bytes raw hold, decoding them unless held. The
// change is shared: renderers only read it.
func (cs *changes) decode(id int64, raw []byte) (*event.FlightChange, error) {
	cs.mu.Lock()
	if h, ok := cs.byID[id]; ok && bytes.Equal(h.raw, raw) {
		cs.mu.Unlock()
		return h.c, nil
	}
	cs.mu.Unlock()
	c, err := event.Decode(raw)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.byID[id]; !ok {
		if len(cs.ring) < changeCacheSize {
			cs.ring = append(cs.ring, id)
		} else {
			delete(cs.byID, cs.ring[cs.next])
			cs.ring[cs.next] = id
			cs.next = (cs.next + 1) % changeCacheSize
		}
	}
	cs.byID[id] = cachedChange{raw: raw, c: &c}
	return &c, nil
}
