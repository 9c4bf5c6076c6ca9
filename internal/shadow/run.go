package shadow

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sources say where `msgx shadow diff` reads each side: a capture file or a Redis channel
// listened to for For (exactly one of the two per side).
type Sources struct {
	LegacyFile, LegacyChannel string
	MsgxFile, MsgxChannel     string
	For                       time.Duration  // how long to listen to the channels
	Redis, RedisPassword      string         // the channels' Redis
	SaveLegacy, SaveMsgx      string         // write what each channel carried to this file ("": do not)
	RowIDs                    string         // a file of "rowid FLID" lines (ReadRowIDs); "": none
	Loc                       *time.Location // of times without an offset (legacy.timezone)
	Status                    io.Writer      // told when the channels are listened to
}

// Run reads both sides as src says and compares them.
func Run(src Sources) (Report, error) {
	opt := Options{}
	var err error
	if src.RowIDs != "" {
		if opt.RowIDs, err = ReadRowIDs(src.RowIDs); err != nil {
			return Report{}, err
		}
	}
	var legacy, msgx []Note
	if src.LegacyChannel != "" || src.MsgxChannel != "" {
		if legacy, msgx, err = listen(src); err != nil {
			return Report{}, err
		}
	}
	if src.LegacyFile != "" {
		if legacy, err = ReadCapture(src.LegacyFile, src.Loc); err != nil {
			return Report{}, err
		}
	}
	if src.MsgxFile != "" {
		if msgx, err = ReadCapture(src.MsgxFile, src.Loc); err != nil {
			return Report{}, err
		}
	}
	return Compare(legacy, msgx, opt), nil
}

// listen subscribes to the channels of src for src.For and saves what they carried.
func listen(src Sources) (legacy, msgx []Note, err error) {
	rdb := redis.NewClient(&redis.Options{Addr: src.Redis, Password: src.RedisPassword, DialTimeout: 5 * time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), src.For)
	defer cancel()
	var channels []string
	for _, ch := range []string{src.LegacyChannel, src.MsgxChannel} {
		if ch != "" {
			channels = append(channels, ch)
		}
	}
	got, err := Listen(ctx, rdb, []string{src.LegacyChannel, src.MsgxChannel}, src.Loc, func() {
		fmt.Fprintf(src.Status, "listening on %s (%s) for %s\n", strings.Join(channels, ", "), src.Redis, src.For)
	})
	if err != nil {
		return nil, nil, err
	}
	if err := SaveCapture(src.SaveLegacy, got[0]); err != nil {
		return nil, nil, err
	}
	return got[0], got[1], SaveCapture(src.SaveMsgx, got[1])
}
