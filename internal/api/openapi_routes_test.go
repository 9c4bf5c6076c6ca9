package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"msgx/internal/metrics"
	"msgx/internal/openapicheck"
)

// notAPI are the routes the OpenAPI document leaves out: the console's pages and assets
// (HTML and scripts, not the API) and the answer of every path no route takes.
var notAPI = []string{"GET /{$}", "GET /console/", "ANY /"}

// registeredRoutes finds every route msgx registers: each call of a ServeMux's Handle or
// HandleFunc with a pattern written out, in the non-test Go files of the module (the API's
// routes here, and those other packages add through Server.Extra: the console's, the
// consistency check's). A pattern without a method is "ANY PATH".
func registeredRoutes(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	routes := map[string]string{} // route → file:line
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			pat, err := strconv.Unquote(lit.Value)
			if err != nil || !strings.Contains(pat, "/") {
				return true
			}
			method, p, found := strings.Cut(pat, " ")
			if !found {
				method, p = "ANY", pat
			}
			routes[method+" "+p] = fset.Position(lit.Pos()).String()
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

// documentedRoutes are the operations of docs/openapi/openapi.json as "METHOD PATH".
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "post", "put", "delete", "patch", "head", "options":
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIRoutes fails when a route exists that the OpenAPI document lacks, or the
// document lists an operation no route serves.
func TestOpenAPIRoutes(t *testing.T) {
	routes := registeredRoutes(t)
	if len(routes) < 40 {
		t.Fatalf("found only %d routes in the source: the scan is broken", len(routes))
	}
	doc := documentedRoutes(t)
	paths := map[string]bool{}
	for _, d := range doc {
		_, p, _ := strings.Cut(d, " ")
		paths[p] = true
	}
	var lacking []string
	for r, where := range routes {
		if slices.Contains(notAPI, r) {
			continue
		}
		method, p, _ := strings.Cut(r, " ")
		if method == "ANY" && paths[p] || slices.Contains(doc, r) {
			continue
		}
		lacking = append(lacking, r+" ("+where+")")
	}
	slices.Sort(lacking)
	for _, r := range lacking {
		t.Errorf("route %s is not in docs/openapi/openapi.json", r)
	}
	for _, d := range doc {
		_, p, _ := strings.Cut(d, " ")
		if _, ok := routes[d]; !ok && routes["ANY "+p] == "" {
			t.Errorf("docs/openapi/openapi.json lists %s, which no route serves", d)
		}
	}

	// The mux Handler builds sends each documented operation of this package's routes to the
	// pattern the document names (the routes other packages add are not in it here).
	s := New(Deps{Inbox: http.NotFoundHandler(), ConfigView: func() (map[string]any, error) { return nil, nil }})
	s.Extra = append(s.Extra, FlightRoutes(nil, nil, nil), FindRoutes(nil), MetricsRoute(metrics.New(nil, "test", nil)), s.RequestRoutes(nil, nil))
	mux := s.mux()
	for _, d := range doc {
		method, p, _ := strings.Cut(d, " ")
		where, ok := routes[d]
		if !ok {
			where = routes["ANY "+p]
		}
		if !strings.HasPrefix(filepath.ToSlash(where), "../../internal/api/") {
			continue
		}
		target := strings.NewReplacer("{id}", "7", "{flid}", "9001", "{type}", "AIRL", "{key}", "CA", "{name}", "KAFKA_FLOP").Replace(p)
		_, pattern := mux.Handler(httptest.NewRequest(method, target, nil))
		if pattern != d && pattern != p {
			t.Errorf("%s %s reaches route %q, not %q", method, target, pattern, d)
		}
	}
}

// TestOpenAPIServed: GET /api/v1/openapi.json answers the document to a viewer.
func TestOpenAPIServed(t *testing.T) {
	s := New(Deps{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:5000", "localhost"
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("the answer is not the OpenAPI 3.1 document (%v): %.200s", err, rec.Body.String())
	}
	if _, _, err := openapicheck.Load(); err != nil {
		t.Fatal(err) // kin-openapi's Validate: a valid OpenAPI 3.1 document, its schemas valid JSON Schema
	}
	if err := openapicheck.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
}
