package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// designPackages returns the packages docs/design.md's "Packages" section lists: the first
// field of each line of its code block that does not start with a space ("internal/store/").
func designPackages(t *testing.T) []string {
	t.Helper()
	text := read(t, "docs/design.md")
	_, section, ok := strings.Cut(text, "\n## 5. Packages")
	if !ok {
		t.Fatal("docs/design.md has no section 5. Packages")
	}
	_, block, ok := strings.Cut(section, "\n```\n")
	block, _, ok2 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/design.md's section 5. Packages has no code block")
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && !strings.HasPrefix(line, " ") {
			out = append(out, strings.TrimSuffix(fields[0], "/"))
		}
	}
	return out
}

// TestDesignListsEveryPackage: docs/design.md names every package of the module, and no
// package that does not exist (a directory with a go.mod of its own, a module that imports
// msgx such as examples/deadletters, is not in `go list ./...` and counts as existing).
func TestDesignListsEveryPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var packages []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(absRoot, dir)
		if err != nil {
			t.Fatal(err)
		}
		packages = append(packages, filepath.ToSlash(rel))
	}
	listed := designPackages(t)
	if len(packages) < 20 || len(listed) < 20 {
		t.Fatalf("go list gives %d packages and design.md lists %d: is the reading still right?", len(packages), len(listed))
	}
	for _, p := range packages {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is not in docs/design.md's package list (section 5)", p)
		}
	}
	for _, p := range listed {
		if slices.Contains(packages, p) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p), "go.mod")); err == nil {
			continue
		}
		t.Errorf("docs/design.md lists %s, which is not a package of the module (go list ./...)", p)
	}
}
