package main

import (
	"fmt"
	"os"
	"strings"

	"msgx/internal/app"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/suggest"
)

// capLimit returns --limit n as the server will apply it: a value above store.MaxPageLimit
// is said on stderr to be capped, never capped silently.
func capLimit(cmd string, n int) int {
	if n > store.MaxPageLimit {
		fmt.Fprintf(os.Stderr, "msgx %s: --limit %d is more than a page holds: showing at most %d (page on with --after)\n", cmd, n, store.MaxPageLimit)
		return store.MaxPageLimit
	}
	return n
}

// checkChoice returns value as one of choices (letter case ignored), "" for "", and answers
// any other value with the choice it probably meant.
func checkChoice(cmd, flagName, value string, choices []string) (string, error) {
	if value == "" {
		return "", nil
	}
	for _, c := range choices {
		if strings.EqualFold(c, value) {
			return c, nil
		}
	}
	return "", app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx %s: --%s %q is not one of %s%s",
		cmd, flagName, value, strings.Join(choices, ", "), suggest.DidYouMean(strings.ToUpper(value), choices))}
}

// procStates and eventStates are the values --state takes for messages and events.
var (
	procStates  = []string{string(pipeline.Pending), string(pipeline.Succeeded), string(pipeline.Skipped), string(pipeline.Failed), string(pipeline.Dead)}
	eventStates = []string{string(pipeline.EventPending), string(pipeline.EventSent), string(pipeline.EventDead)}
	reqStates   = []string{store.ReqRegistered, store.ReqSent, store.ReqDone, store.ReqExpired}
)
