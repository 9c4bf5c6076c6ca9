package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"msgx/internal/suggest"
)

// missingHint is what the error of a config file that cannot be read adds when the file does
// not exist: the file beside it the user probably meant (msgx.yml for msgx.yaml and the
// reverse, or the YAML file with the closest name), "" when there is none.
func missingHint(path string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	var swap string
	switch strings.ToLower(ext) {
	case ".yml":
		swap = stem + ".yaml"
	case ".yaml":
		swap = stem + ".yml"
	}
	if swap != "" {
		if st, err := os.Stat(filepath.Join(dir, swap)); err == nil && !st.IsDir() {
			return " (did you mean " + filepath.Join(dir, swap) + "?)"
		}
	}
	readDir := dir
	if readDir == "" {
		readDir = "."
	}
	entries, err := os.ReadDir(readDir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if x := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (x == ".yml" || x == ".yaml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if s := suggest.Closest(base, names); s != "" {
		return " (did you mean " + filepath.Join(dir, s) + "?)"
	}
	return ""
}
