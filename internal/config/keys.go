package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"msgx/internal/suggest"
)

// OtherEnv are the MSGX_* environment variables that are not configuration keys but are read
// by msgx all the same (a command adding one lists it here, so it is not reported unknown).
// Variables starting MSGX_TEST_ belong to the tests.
var OtherEnv = []string{"MSGX_CONFIG", "MSGX_SERVER", "MSGX_TOKEN"}

// UnknownEnv returns one warning for each MSGX_* variable of environ that msgx does not read,
// with the variable it probably meant: "unknown environment variable MSGX_PIPELINE_BATCH_SIZ
// (did you mean MSGX_PIPELINE_BATCH_SIZE?)". They are warnings, not errors: a platform may
// set MSGX_* variables of its own (Kubernetes does for a service named msgx).
func UnknownEnv(environ []string) []string {
	known := map[string]bool{}
	var names []string
	for _, k := range Keys() {
		known[EnvName(k)] = true
		names = append(names, EnvName(k))
	}
	for _, n := range OtherEnv {
		known[n] = true
		names = append(names, n)
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "MSGX_") || known[name] || strings.HasPrefix(name, "MSGX_TEST_") {
			continue
		}
		if strings.HasPrefix(name, "MSGX_TARGETS_") {
			out = append(out, fmt.Sprintf("environment variable %s is ignored: targets are set in the YAML file only", name))
			continue
		}
		out = append(out, "unknown environment variable "+name+suggest.DidYouMean(name, names))
	}
	sort.Strings(out)
	return out
}

// checkYAML walks a configuration document against Config and returns its problems, each on
// the key's line and in the key's own words, never in Go's: an unknown key with the key it
// probably meant ("line 2: unknown key pipline.batch-size (did you mean
// pipeline.batch-size?)"), a value of the wrong kind ("line 3: pipeline.max-attempts: "abc"
// is not an integer").
func checkYAML(doc *yaml.Node) []string {
	var problems []string
	all := allKeys()
	var walk func(n *yaml.Node, t reflect.Type, path string)
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer && !isLeaf(t) {
			t = t.Elem()
		}
		switch {
		case isLeaf(t):
			if err := n.Decode(reflect.New(t).Interface()); err != nil {
				problems = append(problems, fmt.Sprintf("line %d: %s: %s is not %s", n.Line, path, shown(n), kindOf(t)))
			}
		case t.Kind() == reflect.Struct:
			if n.Kind != yaml.MappingNode {
				if n.Tag == "!!null" {
					return // "http:" with nothing under it
				}
				problems = append(problems, fmt.Sprintf("line %d: %s: %s is not a mapping of keys", n.Line, orRoot(path), shown(n)))
				return
			}
			fields := fieldsOf(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				key := join(path, k.Value)
				ft, ok := fields[k.Value]
				if !ok {
					cands := all
					if strings.HasPrefix(path, "targets.") {
						cands = nil
						for name := range fields {
							cands = append(cands, join(path, name))
						}
						sort.Strings(cands)
					}
					problems = append(problems, fmt.Sprintf("line %d: unknown key %s%s", k.Line, key, hint(key, k.Value, cands)))
					continue
				}
				walk(v, ft, key)
			}
		case t.Kind() == reflect.Map:
			if n.Kind != yaml.MappingNode {
				if n.Tag != "!!null" {
					problems = append(problems, fmt.Sprintf("line %d: %s: %s is not a mapping of names", n.Line, path, shown(n)))
				}
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
			}
		}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		walk(doc.Content[0], reflect.TypeOf(Config{}), "")
	}
	return problems
}

// hint is " (did you mean X?)" for a misspelt key, or for a key put in the wrong section the
// keys elsewhere that end like it ("batch-size" → pipeline.batch-size).
func hint(key, last string, cands []string) string {
	if h := suggest.DidYouMean(key, cands); h != "" {
		return h
	}
	var same []string
	for _, c := range cands {
		if strings.HasSuffix(c, "."+last) {
			same = append(same, c)
		}
	}
	if len(same) > 0 {
		return " (did you mean " + strings.Join(same, " or ") + "?)"
	}
	return ""
}

var unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// isLeaf reports whether t is a value (not a section of keys): a scalar, a list, a duration,
// or a type that reads itself.
func isLeaf(t reflect.Type) bool {
	if t == reflect.TypeOf(time.Duration(0)) || reflect.PointerTo(t).Implements(unmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	case reflect.Pointer:
		return isLeaf(t.Elem())
	}
	return true
}

// fieldsOf maps the YAML names of t's fields to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			m[tag] = t.Field(i).Type
		}
	}
	return m
}

// allKeys lists every key and section of Config ("pipeline", "pipeline.batch-size",
// "targets"), for suggestions.
func allKeys() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		names := make([]string, 0)
		fields := fieldsOf(t)
		for n := range fields {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			key := join(path, n)
			out = append(out, key)
			if ft := fields[n]; ft.Kind() == reflect.Struct && !isLeaf(ft) {
				walk(ft, key)
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return out
}

// kindOf says what a value of t must be, in words.
func kindOf(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return "a duration (like 1s, 500ms, 10m)"
	case t == reflect.TypeOf(List{}), t == reflect.TypeOf(Strings{}):
		return "a list or a comma-separated string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return kindOf(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(kindOf(t.Elem()), "an "), "a ") + "s"
	}
	return "a value of the right kind"
}

// shown is how a value is quoted in a problem: a scalar as written, else what it is.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "the value"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}
