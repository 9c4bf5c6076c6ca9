package shadow

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadCapture reads a capture file of JSON lines (ReadLines).
func ReadCapture(path string, loc *time.Location) ([]Note, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	notes, err := ReadLines(f, loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return notes, nil
}

// SaveCapture writes the payloads read from a channel as a capture (nothing when path is
// empty).
func SaveCapture(path string, notes []Note) error {
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, n := range notes {
		b.Write(n.Raw)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// ReadRowIDs reads "rowid FLID" lines (spaces, tabs or a comma between; # comments): the
// legacy's row ids of the flights (Options.RowIDs).
func ReadRowIDs(path string) (map[int64]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64]int64{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(parts) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"rowid FLID\", got %q", path, line, s)
		}
		row, err1 := strconv.ParseInt(parts[0], 10, 64)
		flid, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: %q is not two integers", path, line, s)
		}
		out[row] = flid
	}
	return out, sc.Err()
}

// Listen subscribes to each non-empty channel at once and reads until ctx ends; ready is
// called when every subscription is confirmed. It returns what each channel carried, in the
// order of channels.
func Listen(ctx context.Context, rdb *redis.Client, channels []string, loc *time.Location, ready func()) ([][]Note, error) {
	out := make([][]Note, len(channels))
	errs := make([]error, len(channels))
	var wg, subscribed sync.WaitGroup
	for i, ch := range channels {
		if ch == "" {
			continue
		}
		subscribed.Add(1)
		var once sync.Once
		wg.Go(func() {
			defer once.Do(subscribed.Done)
			out[i], errs[i] = Subscribe(ctx, rdb, ch, loc, 0, func() { once.Do(subscribed.Done) })
		})
	}
	subscribed.Wait()
	ready()
	wg.Wait()
	return out, errors.Join(errs...)
}
