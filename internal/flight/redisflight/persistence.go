package redisflight

import (
	"context"
	"fmt"
	"strings"
)

// Persistence is what Redis keeps on disk, as its configuration says (CONFIG GET).
type Persistence struct {
	AppendOnly  string // appendonly: yes | no
	AppendFsync string // appendfsync: always | everysec | no
	Save        string // save: the RDB snapshot points ("" none)
}

// Volatile says Redis keeps nothing on disk: no AOF and no RDB snapshot point.
func (p Persistence) Volatile() bool {
	return !strings.EqualFold(p.AppendOnly, "yes") && strings.TrimSpace(p.Save) == ""
}

// Persistence reads appendonly, appendfsync and save from Redis.
func (s *Store) Persistence(ctx context.Context) (Persistence, error) {
	var p Persistence
	for _, k := range []struct {
		name string
		to   *string
	}{{"appendonly", &p.AppendOnly}, {"appendfsync", &p.AppendFsync}, {"save", &p.Save}} {
		m, err := s.rdb.ConfigGet(ctx, k.name).Result()
		if err != nil {
			return p, unavailable("CONFIG GET "+k.name, err)
		}
		v, ok := m[k.name]
		if !ok {
			return p, unavailable("CONFIG GET "+k.name, fmt.Errorf("no %s in the answer", k.name))
		}
		*k.to = v
	}
	return p, nil
}

// Dials counts the connections the client has opened to Redis since New: one that grows
// after an outage is a reconnect (to the same server restarted, or to a new master), whose
// persistence may differ from what was read before.
func (s *Store) Dials() uint64 { return s.dials.Load() }
