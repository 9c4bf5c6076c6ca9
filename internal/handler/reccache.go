package handler

import (
	"bytes"
	"sync"
)

// recordCacheSize bounds the flights a Registry keeps decoded: a busy day's flights (the
// 3,000-flight snapshot and the FLOPs that follow it fit), a few MB.
const recordCacheSize = 4096

// recordCache keeps, per FLID, the decoded form of the last canonical record a handler of the
// Registry read or wrote, so that the next message on that flight need not decode the stored
// JSON again (on the FLOP path that decode, and the encode that checks it is canonical, were
// most of the decision's cost).
//
// An entry is used only when the bytes the view returns now are exactly the bytes it was
// cached with. So the cache never decides what a handler sees: a record written by a
// Decision that was never committed (a rollback to the message's savepoint, a failed
// batch, a crash), a record changed by another writer or another process, or a restart, all
// show up as bytes that differ from the entry, and the record is decoded from the store as
// without the cache. It needs no invalidation and is safe to share between pumps.
//
// A cached record is never changed: a handler works on a deep copy (cloneRecord).
type recordCache struct {
	mu   sync.Mutex
	m    map[int64]cachedRecord
	max  int
	hits int // records served (for tests)
}

type cachedRecord struct {
	enc []byte        // the canonical encoding (encodeRecord) of rec
	rec *FlightRecord // what decoding enc gives; read-only
}

func newRecordCache(max int) *recordCache {
	return &recordCache{m: make(map[int64]cachedRecord), max: max}
}

// get returns the decoded record of flid when the cache holds it for exactly the bytes b.
// A nil cache holds nothing.
func (c *recordCache) get(flid int64, b []byte) (*FlightRecord, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[flid]
	if !ok || !bytes.Equal(e.enc, b) {
		return nil, false
	}
	c.hits++
	return e.rec, true
}

// put keeps rec as the decoding of enc for flid, replacing what flid had; when the cache is
// full an arbitrary other entry goes. The caller gives up rec: nobody may change it after.
func (c *recordCache) put(flid int64, enc []byte, rec *FlightRecord) {
	if c == nil || rec == nil || enc == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, held := c.m[flid]; !held && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[flid] = cachedRecord{enc: enc, rec: rec}
}

// len is the number of flights held (for tests).
func (c *recordCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
