package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load reads the YAML file at path (none when empty), then the environment, then validates
// (Validate).
func Load(path string, environ []string) (Config, error) {
	c := Default()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("config: %w%s", err, missingHint(path, err))
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return c, fmt.Errorf("config %s: %v", path, err)
		}
		if problems := checkYAML(&doc); len(problems) > 0 {
			return c, fmt.Errorf("config %s: %s", path, strings.Join(problems, "; "))
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("config %s: %s", path, describeYAMLError(b, err))
		}
	}
	if err := applyEnv(&c, environ); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// describeYAMLError rewrites yaml's "line N: cannot unmarshal …" so that each problem names
// the key at that line (pipeline.max-attempts), not only its line.
func describeYAMLError(doc []byte, err error) string {
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil {
		return err.Error()
	}
	keys := map[int]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if path != "" {
					k = path + "." + k
				}
				keys[n.Content[i].Line] = k
				walk(n.Content[i+1], k)
			}
		}
	}
	walk(&root, "")
	return yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		line, _ := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
		if k, ok := keys[line]; ok {
			return fmt.Sprintf("line %d: %s: ", line, k)
		}
		return m
	})
}

// List is a list of words written as a YAML list or as one comma-separated string (as the
// environment gives it); blanks are dropped and each word is upper-cased.
type List []string

// UnmarshalYAML accepts a sequence or a comma-separated scalar.
func (l *List) UnmarshalYAML(n *yaml.Node) error {
	items, err := listItems(n, upperWord)
	*l = items
	return err
}

func upperWord(w string) string { return strings.ToUpper(strings.TrimSpace(w)) }

func splitList(s string) List { return splitWords(s, upperWord) }

// listItems reads a YAML list or a comma-separated string into its non-empty words, each
// passed through norm (List: upper case; Strings: as written).
func listItems(n *yaml.Node, norm func(string) string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return splitWords(n.Value, norm), nil
	case yaml.SequenceNode:
		var items []string
		if err := n.Decode(&items); err != nil {
			return nil, err
		}
		return splitWords(strings.Join(items, ","), norm), nil
	}
	return nil, fmt.Errorf("line %d: want a list or a comma-separated string", n.Line)
}

// splitWords splits s at commas and keeps the non-empty words, each passed through norm.
func splitWords(s string, norm func(string) string) []string {
	out := []string{}
	for _, w := range strings.Split(s, ",") {
		if w = norm(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// EnvName returns the environment variable of a key path ("pipeline.max-attempts").
func EnvName(key string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return "MSGX_" + strings.ToUpper(r.Replace(key))
}

// Keys lists every key path of the configuration that an environment variable can set.
func Keys() []string {
	var out []string
	walk(reflect.ValueOf(&Config{}).Elem(), "", func(key string, _ reflect.Value) error {
		out = append(out, key)
		return nil
	})
	return out
}

func applyEnv(c *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "MSGX_") {
			env[k] = v
		}
	}
	return walk(reflect.ValueOf(c).Elem(), "", func(key string, f reflect.Value) error {
		v, ok := env[EnvName(key)]
		if !ok {
			return nil
		}
		if err := setValue(f, v); err != nil {
			return fmt.Errorf("config: %s (from %s=%q): %v", key, EnvName(key), v, err)
		}
		return nil
	})
}

// walk calls fn for every settable leaf of v with its key path; maps (targets) are skipped.
func walk(v reflect.Value, prefix string, fn func(string, reflect.Value) error) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Duration(0)) {
			if err := walk(f, key, fn); err != nil {
				return err
			}
			continue
		}
		if f.Kind() == reflect.Map {
			continue
		}
		if err := fn(key, f); err != nil {
			return err
		}
	}
	return nil
}

func setValue(f reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (like 1s, 500ms, 10m)")
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		f.Set(reflect.ValueOf(&b))
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		f.SetBool(b)
	case f.Kind() == reflect.String:
		f.SetString(s)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		f.SetInt(n)
	case f.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		f.SetFloat(x)
	case f.Type() == reflect.TypeOf(List{}):
		f.Set(reflect.ValueOf(splitList(s)))
	case f.Type() == reflect.TypeOf(Strings{}):
		f.Set(reflect.ValueOf(splitStrings(s)))
	case f.Type() == reflect.TypeOf(Tokens{}):
		ts, err := parseTokens(s)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(ts))
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int:
		parts := strings.Split(s, ",")
		out := reflect.MakeSlice(f.Type(), len(parts), len(parts))
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return fmt.Errorf("not a comma-separated list of integers")
			}
			out.Index(i).SetInt(int64(n))
		}
		f.Set(out)
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}
