package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// configDoc is the configuration reference a user reads; it must list exactly the keys Config
// has, each with its real default.
const configDoc = "../../docs/configuration.md"

// docRow is a table row of docs/configuration.md whose first cell is a key in code font:
// | `pipeline.batch-size` | `200` | meaning |.
var docRow = regexp.MustCompile("^\\| `([a-z][a-z0-9.<>A-Z-]*)` \\| ([^|]*) \\|")

// literal is a default cell that is exactly one value in code font.
var literal = regexp.MustCompile("^`([^`]*)`$")

// TestConfigurationDocListsEveryKey: every key of Config (every one an environment variable can
// set, and targets) has its row in docs/configuration.md, every row names a key that exists, and
// a default written as a value in code font is the default msgx runs with, read as the same
// key's environment variable would be. A default written in words is one worked out at start
// (database.dsn from data-dir, legacy.timezone from sis.timezone …): the key's own default must
// then be empty, so that a literal default can never hide behind words.
func TestConfigurationDocListsEveryKey(t *testing.T) {
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // key → default cell
	for i, line := range strings.Split(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("%s:%d: %s is documented twice", configDoc, i+1, m[1])
		}
		documented[m[1]] = strings.TrimSpace(m[2])
	}
	defaults := map[string]reflect.Value{}
	def := Default()
	if err := walk(reflect.ValueOf(&def).Elem(), "", func(key string, v reflect.Value) error {
		defaults[key] = v
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(defaults) < 50 {
		t.Fatalf("only %d keys found in Config", len(defaults))
	}
	for _, key := range Keys() {
		cell, ok := documented[key]
		if !ok {
			t.Errorf("key %s (%s) is missing from %s", key, EnvName(key), configDoc)
			continue
		}
		want := defaults[key]
		if m := literal.FindStringSubmatch(cell); m != nil {
			got := reflect.New(want.Type()).Elem()
			if err := setValue(got, m[1]); err != nil {
				t.Errorf("%s: documented default %s is not a value of the key: %v", key, cell, err)
				continue
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s: documented default %s, but msgx's default is %s", key, cell, shownDefault(want))
			}
			continue
		}
		if !want.IsZero() {
			t.Errorf("%s: documented default %q is words, but msgx's default is the value %v: write it in code font", key, cell, want.Interface())
		}
	}
	for key := range documented {
		if _, ok := defaults[key]; ok || key == "targets.<NAME>" {
			continue
		}
		t.Errorf("%s documents %s, which is no configuration key", configDoc, key)
	}
	if _, ok := documented["targets.<NAME>"]; !ok {
		t.Errorf("%s does not document targets.<NAME>", configDoc)
	}
}

// shownDefault is a default as the error says it: "empty" for a zero value.
func shownDefault(v reflect.Value) string {
	if v.IsZero() {
		return "empty"
	}
	return fmt.Sprint(v.Interface())
}
