package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
)

// endToEndTests returns a -test.skip pattern naming every Test function of this package's
// e2e_test.go and *_e2e_test.go files: the tests that run the msgx binary as a subprocess.
// Under -short (the race run of .ci/run) TestMain skips them: the race detector would watch
// only this test binary, not the msgx it runs, and the plain run runs them anyway.
func endToEndTests() (string, error) {
	files, err := filepath.Glob("*e2e_test.go")
	if err != nil {
		return "", err
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				names = append(names, regexp.QuoteMeta(fn.Name.Name))
			}
		}
	}
	return "^(" + strings.Join(names, "|") + ")$", nil
}
