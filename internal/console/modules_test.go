package console

import (
	"encoding/json"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"msgx/internal/api"
)

// jsAssets returns every script of the console by its path under assets ("views/jobs.js").
func jsAssets(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := assets.ReadFile(p)
		out[strings.TrimPrefix(p, "assets/")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d scripts in assets: %v", len(out), out)
	}
	return out
}

// documentedRoutes are the operations of docs/openapi/openapi.json as "METHOD PATH", the
// routes the server serves (internal/api's TestOpenAPIRoutes holds the document against the
// routes registered in the source).
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for p, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "post", "put", "delete", "patch":
				out = append(out, strings.ToUpper(method)+" "+p)
			}
		}
	}
	return out
}

var (
	routesTable = regexp.MustCompile(`(?s)\nexport const routes = \{\n(.*?)\n\};\n`)
	routeEntry  = regexp.MustCompile(`^  \w+: '([A-Z]+ /[^' ]*)',$`)
	apiPath     = regexp.MustCompile("['\"`]/api/")
	comment     = regexp.MustCompile(`(?m)^\s*//.*$`)
)

// TestConsoleCallsOnlyRoutes: every route of the API the console calls is in api.js's routes
// table and is a route of the server (an operation of the OpenAPI document, method and path);
// no other script writes an API path or calls fetch.
func TestConsoleCallsOnlyRoutes(t *testing.T) {
	scripts := jsAssets(t)
	src := scripts["api.js"]
	m := routesTable.FindStringSubmatchIndex(src)
	if m == nil {
		t.Fatal("api.js has no `export const routes = {…};` table")
	}
	documented := documentedRoutes(t)
	n := 0
	for _, line := range strings.Split(src[m[2]:m[3]], "\n") {
		e := routeEntry.FindStringSubmatch(line)
		if e == nil {
			t.Errorf("api.js routes: %q is not an entry `name: 'METHOD /path',`", line)
			continue
		}
		n++
		if !slices.Contains(documented, e[1]) {
			t.Errorf("api.js routes: the console calls %s, which is not a route of the server (docs/openapi/openapi.json)", e[1])
		}
	}
	if n < 30 {
		t.Errorf("api.js routes has %d entries; the console calls more than 30 routes: is the pattern still right?", n)
	}
	for file, text := range scripts {
		if file == "api.js" {
			text = text[:m[0]] + strings.Repeat("\n", strings.Count(src[m[0]:m[1]], "\n")) + text[m[1]:]
		}
		text = comment.ReplaceAllString(text, "")
		if loc := apiPath.FindStringIndex(text); loc != nil {
			t.Errorf("%s:%d writes an API path; name it in api.js's routes and call it through api() or url()",
				file, strings.Count(text[:loc[0]], "\n")+1)
		}
		if file != "api.js" && strings.Contains(text, "fetch(") {
			t.Errorf("%s calls fetch; every call of the API goes through api() in api.js", file)
		}
	}
}

var (
	importLine = regexp.MustCompile(`(?m)^import\b.*$`)
	importFrom = regexp.MustCompile(`(?m)^import \{([^}]*)\} from '([^']+)';$`)
	exported   = regexp.MustCompile(`(?m)^export (?:async )?(?:function|const|let|class) (\w+)`)
)

// TestModulesLink: the console loads as modules, and a browser refuses a module whose import
// names a file or an export that is not there (the page stays blank). Every import names a
// script of the console by a relative path, and every name it takes is exported there; the
// page loads app.js as a module.
func TestModulesLink(t *testing.T) {
	scripts := jsAssets(t)
	exports := map[string][]string{}
	for file, text := range scripts {
		for _, m := range exported.FindAllStringSubmatch(text, -1) {
			exports[file] = append(exports[file], m[1])
		}
	}
	for file, text := range scripts {
		for _, line := range importLine.FindAllString(text, -1) {
			if !importFrom.MatchString(line) {
				t.Errorf("%s: %q is not written `import { a, b } from './file.js';`", file, line)
			}
		}
		for _, m := range importFrom.FindAllStringSubmatch(text, -1) {
			if !strings.HasPrefix(m[2], "./") && !strings.HasPrefix(m[2], "../") {
				t.Errorf("%s imports %q: not a relative path to a script of the console", file, m[2])
				continue
			}
			target := path.Join(path.Dir(file), m[2])
			if _, ok := scripts[target]; !ok {
				t.Errorf("%s imports %s: no such script", file, target)
				continue
			}
			for _, name := range strings.Split(m[1], ",") {
				if name = strings.TrimSpace(name); !slices.Contains(exports[target], name) {
					t.Errorf("%s imports %s from %s, which does not export it", file, name, target)
				}
			}
		}
	}
	index, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), `<script src="/console/app.js" type="module">`) {
		t.Error("index.html does not load /console/app.js as a module")
	}
}

// TestEveryScriptIsServedAsJavaScript: a browser runs a module only when its answer says
// JavaScript (and nosniff forbids guessing), so every script is served with that type.
func TestEveryScriptIsServedAsJavaScript(t *testing.T) {
	srv := server(t, &fakeStore{})
	for file := range jsAssets(t) {
		resp, _ := get(t, srv.URL+"/console/"+file)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.Contains(ct, "javascript") {
			t.Errorf("GET /console/%s: %d %q", file, resp.StatusCode, ct)
		}
	}
}
