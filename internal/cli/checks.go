package cli

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/suggest"
)

// The checks of flag values and arguments the commands share: each reads a value as the API
// takes it, or answers it with a UsageError that names the command and the value it
// probably meant.

// ErrorClasses lists the pipeline's error classes by name, as --class takes them.
func ErrorClasses() []string {
	out := make([]string, len(pipeline.Classes))
	for i, c := range pipeline.Classes {
		out[i] = string(c)
	}
	return out
}

// Classes reads command cmd's --class C[,C…]: the classes in upper case.
func (e *Env) Classes(cmd, classes string) ([]string, error) {
	var cl []string
	for _, c := range strings.Split(classes, ",") {
		if c = strings.TrimSpace(c); c != "" {
			if _, ok := pipeline.ParseErrorClass(strings.ToUpper(c)); !ok {
				return nil, UsageError(fmt.Sprintf("%s %s: unknown class %q%s; the classes are %s",
					e.Program.Name, cmd, c, suggest.DidYouMean(c, ErrorClasses()), strings.Join(ErrorClasses(), ", ")))
			}
			cl = append(cl, strings.ToUpper(c))
		}
	}
	return cl, nil
}

// JobKind reads a job kind given to command cmd: the kind in upper case.
func (e *Env) JobKind(cmd, kind string) (string, error) {
	k := strings.ToUpper(strings.TrimSpace(kind))
	if slices.Contains(jobkind.Kinds, k) {
		return k, nil
	}
	return "", UsageError(fmt.Sprintf("%s %s: unknown job kind %q%s; the kinds are %s",
		e.Program.Name, cmd, kind, suggest.DidYouMean(k, jobkind.Kinds), strings.Join(jobkind.Kinds, ", ")))
}

// Movement reads command cmd's --movement: A, D, arrivals, departures (letter case
// ignored); "" for all.
func (e *Env) Movement(cmd, s string) (string, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "":
		return "", nil
	case "A", "ARR", "ARRIVAL", "ARRIVALS":
		return "A", nil
	case "D", "DEP", "DEPARTURE", "DEPARTURES":
		return "D", nil
	}
	return "", UsageError(fmt.Sprintf("%s %s: --movement %q is neither A (arrivals) nor D (departures)", e.Program.Name, cmd, s))
}

// ID reads the one id command cmd takes as its argument arg: a positive integer, or a
// UsageError saying arg is not one (what: "a message id", "a FLID").
func (e *Env) ID(cmd, arg, what string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, UsageError(fmt.Sprintf("%s %s: %q is not %s", e.Program.Name, cmd, arg, what))
	}
	return id, nil
}

// IDs reads the ids command cmd takes as arguments, each argument one id or several
// comma-separated, at most most of them.
func (e *Env) IDs(cmd string, args []string, most int) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		for _, f := range strings.Split(a, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || id <= 0 {
				return nil, UsageError(fmt.Sprintf("%s %s: %q is not an id", e.Program.Name, cmd, f))
			}
			ids = append(ids, id)
		}
	}
	if len(ids) > most {
		return nil, UsageError(fmt.Sprintf("%s %s: %d ids; at most %d at a time", e.Program.Name, cmd, len(ids), most))
	}
	return ids, nil
}

// ReplayModeFlags refuses a flag of msgx replay that does not apply to the chosen replay (messages, or
// --events): a flag ignored there would turn what the operator meant as a narrow replay
// into a wide real one.
func ReplayModeFlags(fs *flag.FlagSet, events bool) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case err != nil:
		case events && f.Name == "class":
			err = UsageError("msgx replay: --class does not apply with --events (dead events are chosen by --target T and --id N); " +
				"to replay messages of a class, drop --events; nothing was replayed")
		case !events && f.Name == "target":
			err = UsageError("msgx replay: --target applies only with --events (to replay a target's dead events: msgx replay --events --target T); " +
				"messages are chosen by --class and --id; nothing was replayed")
		}
	})
	return err
}

// Jobs picks from jobs (newest first, as the server lists its newest 100) those of the
// listing's page: ids between --after and --before, in --order, at most --limit; more is the
// flags of the page after it ("" when there is none).
func (l *Listing) Jobs(jobs []client.Job) (out []client.Job, more string) {
	asc := strings.EqualFold(l.Order, "asc")
	for _, j := range jobs {
		if (l.After > 0 && j.ID <= l.After) || (l.Before > 0 && j.ID >= l.Before) {
			continue
		}
		out = append(out, j)
	}
	if asc {
		slices.Reverse(out)
	}
	if len(out) > l.Limit {
		if asc {
			more = fmt.Sprintf("--after %d --order asc", out[l.Limit-1].ID)
		} else {
			more = fmt.Sprintf("--before %d", out[l.Limit-1].ID)
		}
		out = out[:l.Limit]
	}
	return out, more
}
