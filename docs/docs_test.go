// Package docs_test checks the documentation a user reads: the README stays a front door, every
// relative link in README.md and docs/*.md leads to a file of this repository (and to a heading
// of it, when the link names one), and nothing points outside the repository, where a clone
// has nothing.
package docs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

const root = ".."

// written are the documents kept to lines a reader can read without scrolling sideways.
var written = []string{"README.md", "docs/operations.md", "docs/console.md", "docs/runbook.md",
	"docs/configuration.md", "docs/deployment.md", "docs/cut-over.md", "docs/benchmarks.md"}

const (
	maxReadmeLines = 250
	maxLineRunes   = 200
)

// documents returns README.md and every docs/*.md, as paths relative to the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	if len(out) < 8 {
		t.Fatalf("only %d documents found: %v", len(out), out)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeIsAFrontDoor(t *testing.T) {
	if n := strings.Count(read(t, "README.md"), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d: move the detail into docs/", n, maxReadmeLines)
	}
}

func TestDocLinesAreWrapped(t *testing.T) {
	for _, doc := range written {
		for i, line := range strings.Split(read(t, doc), "\n") {
			if n := utf8.RuneCountInString(line); n > maxLineRunes {
				t.Errorf("%s:%d: %d characters; wrap it under %d", doc, i+1, n, maxLineRunes)
			}
		}
	}
}

// prose returns a Markdown text without its fenced code blocks and inline code, where a
// "[x](y)" or a "# heading" is not one.
func prose(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			out = append(out, "")
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			out = append(out, "")
			continue
		}
		out = append(out, inlineCode.ReplaceAllString(line, "``"))
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// anchors returns the fragment ids GitHub gives the headings of a Markdown text: lower case,
// punctuation dropped, spaces as dashes, a repeated one numbered -1, -2 ….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		for n, base := 1, id; out[id]; n++ {
			id = base + "-" + strconv.Itoa(n)
		}
		out[id] = true
	}
	return out
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md names a file inside the
// repository, and a #fragment names a heading of the Markdown file it points at.
func TestDocLinksResolve(t *testing.T) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range documents(t) {
		for i, line := range prose(read(t, doc)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := doc + ":" + strconv.Itoa(i+1)
				path, frag, _ := strings.Cut(target, "#")
				file := doc
				if path != "" {
					file = filepath.ToSlash(filepath.Join(filepath.Dir(doc), path))
				}
				abs, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(file)))
				if err != nil {
					t.Fatal(err)
				}
				if abs != absRoot && !strings.HasPrefix(abs, absRoot+string(filepath.Separator)) {
					t.Errorf("%s: link %s leaves the repository (a clone has nothing there)", where, target)
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s: link %s: no file %s", where, target, file)
					continue
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: link %s: a fragment of a file that is not Markdown", where, target)
					continue
				}
				if !anchors(read(t, file))[frag] {
					t.Errorf("%s: link %s: %s has no heading #%s", where, target, file, frag)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found; is the link pattern still right?", checked)
	}
}

// TestNothingPointsOutsideTheRepository: no file of the repository sends its reader to the
// project's shared notes beside it, nor to the format notes kept there under another name:
// the repository's copy of the SIS format is docs/sis-format.md.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	outside := [][]byte{[]byte("../" + "shared"), []byte("FORMAT" + ".md")}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "artifacts" || (name == "data" && path == filepath.Join(root, "data")) {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 4<<20 || !info.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range outside {
			if i := bytes.Index(b, s); i >= 0 {
				line := bytes.Count(b[:i], []byte("\n")) + 1
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: names %s, which a clone of this repository does not have", rel, line, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
