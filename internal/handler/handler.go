// Package handler holds the pure handlers, one per type tag (AIRL-ADD, FLOP-CHOT, SCHD-DNLD…),
// and the registry the pump looks them up in. A handler reads the decoded message and a
// read-only view of the current state and returns a pipeline.Decision; it never writes to a
// database, Redis or a broker. Cross-cutting behaviour (retries, poison, identity) is the
// pump's, not the handlers'.
package handler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// View is the read-only state a handler may consult (pipeline.View). It is declared in
// pipeline so that the flight stores that serve it (internal/flight/redisflight) need not
// import the handlers.
type View = pipeline.View

// Handler decides what one message does.
type Handler interface {
	Decide(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error)
}

// Func adapts a function to Handler.
type Func func(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error)

// Decide calls f.
func (f Func) Decide(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error) {
	return f(ctx, view, msg)
}

// Registry maps type tags (TYPE-STYP) to handlers. Besides the exact tags it may hold one
// fallback handler per TYPE, for the STYPs of that TYPE that have no handler of their own
// (SCHD: every STYP other than DNLD, RESP and DEL upserts, as ADFT does).
//
// The flight handlers a Registry holds share a cache of decoded flight records (see
// recordCache): one Registry per pump keeps the records of the flights it works on decoded.
type Registry struct {
	m       map[string]Handler
	byTyp   map[string]Handler
	records *recordCache
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{m: map[string]Handler{}, byTyp: map[string]Handler{}, records: newRecordCache(recordCacheSize)}
}

// withRecords adapts a decision that takes the Registry's record cache to a Handler.
func withRecords(c *recordCache, f func(context.Context, View, *sis.Message, *recordCache) (pipeline.Decision, error)) Func {
	return func(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error) {
		return f(ctx, view, msg, c)
	}
}

// Register adds the handler of tag; registering a tag twice is a programming error.
func (r *Registry) Register(tag string, h Handler) {
	if _, dup := r.m[tag]; dup {
		panic(fmt.Sprintf("handler: %s registered twice", tag))
	}
	r.m[tag] = h
}

// Replace sets the handler of tag whether or not one is registered; msgx's test hooks use it to
// put a failing handler in the binary's registry.
func (r *Registry) Replace(tag string, h Handler) { r.m[tag] = h }

// RegisterType adds the fallback handler of TYPE typ, used by Lookup for a tag of that TYPE
// that is not registered exactly; registering a TYPE twice is a programming error.
func (r *Registry) RegisterType(typ string, h Handler) {
	if _, dup := r.byTyp[typ]; dup {
		panic(fmt.Sprintf("handler: TYPE %s fallback registered twice", typ))
	}
	r.byTyp[typ] = h
}

// Lookup returns the handler of tag: the one registered for the exact tag, else the fallback
// of its TYPE (the part before the first "-"), else none (the message is UNSUPPORTED).
func (r *Registry) Lookup(tag string) (Handler, bool) {
	if h, ok := r.m[tag]; ok {
		return h, true
	}
	if typ, _, ok := strings.Cut(tag, "-"); ok {
		if h, ok := r.byTyp[typ]; ok {
			return h, true
		}
	}
	return nil, false
}

// Tags returns the type tags registered exactly, sorted.
func (r *Registry) Tags() []string {
	out := make([]string, 0, len(r.m))
	for tag := range r.m {
		out = append(out, tag)
	}
	sort.Strings(out)
	return out
}

// SkipError is returned by a handler that deliberately does not apply a message; the pump
// records it SKIPPED with Reason as its last error.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Skip returns a SkipError.
func Skip(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

// AsSkip reports whether err is a SkipError.
func AsSkip(err error) (*SkipError, bool) {
	var s *SkipError
	ok := errors.As(err, &s)
	return s, ok
}

// Options are the settings handlers take from config.
type Options struct {
	// AllowEmptyRefReplace lets a reference DNLD/RESP with zero records wipe its TYPE.
	AllowEmptyRefReplace bool
}

// Default returns a registry with every handler msgx has.
func Default(opt Options) *Registry {
	r := NewRegistry()
	RegisterRef(r, opt)
	RegisterFlop(r)
	RegisterSchd(r)
	RegisterSchs(r)
	return r
}

// nof writes a count with its noun, singular for one ("1 flight", "3 flights"), for notes.
func nof(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
