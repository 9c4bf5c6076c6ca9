package jobs

import (
	"strconv"
	"strings"

	"msgx/internal/pipeline"
)

// Params are a job's parameters (PUMP_JOB.PARAMS, `msgx job run KIND --flid 7002`): words
// separated by spaces or commas, each a flag (prune) or key=value (flid=7002,
// day=2026-03-15).
type Params map[string]string

// ParseParams reads s, allowing only the keys of allowed; an unknown key or a malformed word
// is MALFORMED (the job dies at once: retrying cannot fix it).
func ParseParams(s string, allowed ...string) (Params, error) {
	out := Params{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
		k, v, _ := strings.Cut(w, "=")
		k = strings.ToLower(strings.TrimLeft(k, "-"))
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			if len(allowed) == 0 {
				return nil, pipeline.Errorf(pipeline.Malformed, "parameter %q: this job takes none", w)
			}
			return nil, pipeline.Errorf(pipeline.Malformed, "parameter %q: this job takes %s", w, strings.Join(allowed, ", "))
		}
		out[k] = v
	}
	return out, nil
}

// CheckParams refuses any parameter (a job that takes none).
func CheckParams(s string) error {
	_, err := ParseParams(s)
	return err
}

// Int returns the integer parameter k (0 when absent).
func (p Params) Int(k string) (int64, error) {
	v, ok := p[k]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, pipeline.Errorf(pipeline.Malformed, "parameter %s=%q is not a positive number", k, v)
	}
	return n, nil
}

// Has says whether the flag k is given.
func (p Params) Has(k string) bool {
	_, ok := p[k]
	return ok
}
