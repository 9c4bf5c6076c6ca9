package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msgx/internal/config"
)

// A config file that does not exist is answered with the file beside it the user probably
// meant: msgx.yaml for msgx.yml and the reverse, or the YAML file with the closest name.
func TestAMissingConfigFileSuggestsTheOneThere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"msgx.yaml", "other.yml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "msgx.yml"), "(did you mean " + filepath.Join(dir, "msgx.yaml") + "?)"},
		{filepath.Join(dir, "other.yaml"), "(did you mean " + filepath.Join(dir, "other.yml") + "?)"},
		{filepath.Join(dir, "msx.yaml"), "(did you mean " + filepath.Join(dir, "msgx.yaml") + "?)"},
		{filepath.Join(dir, "zzzzzzzz.yaml"), ""},
	} {
		_, err := config.Load(c.path, nil)
		if err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("%s: %v", c.path, err)
		}
		if got := err.Error(); (c.want == "" && strings.Contains(got, "did you mean")) || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.path, got, c.want)
		}
	}
}
