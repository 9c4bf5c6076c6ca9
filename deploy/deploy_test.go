// Package deploy_test checks the monitoring files in deploy/: the Prometheus alert rules
// (promtool check rules, and promtool test rules on their unit tests), the Grafana dashboard
// (valid JSON whose every query parses as PromQL), and that every msgx metric the rules and
// the dashboard name exists in msgx's registry, and every metric in the registry is listed in
// docs/operations.md.
package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/testkit"
)

const (
	rulesFile     = "prometheus/msgx-alerts.yml"
	rulesTestFile = "prometheus/msgx-alerts.test.yml"
	dashboardFile = "grafana/msgx-dashboard.json"
)

// pending are metrics the rules or dashboard use before msgx exports them, with the issue
// that brings them.
var pending = map[string]string{
	"msgx_consistency_mismatches_total": "issue 9: the consistency sentinel",
}

// aliases are metrics msgx keeps under an older name for alerts written before; deploy/ uses
// the new name.
var aliases = map[string]string{
	"msgx_oldest_pending_event_age_seconds": "msgx_target_oldest_pending_age_seconds",
}

// registered returns the name of every msgx metric `msgx serve` registers (the jobs' too).
func registered(t *testing.T) []string {
	t.Helper()
	m := metrics.New(pipeline.SystemClock{}, "test", func() bool { return true })
	p := pump.New(nil, handler.NewRegistry(), pump.Options{})
	m.Register(p.TroubleMetric(), p.ParkedMetric(), p.HaltMetric())
	m.Register(jobs.Collectors()...)
	return m.Names()
}

// promtool returns the promtool binary; absent, the test fails under
// MSGX_TEST_REQUIRE_SERVICES=1 (CI installs it: Debian's prometheus package) and skips
// otherwise.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	testkit.RequireService(t, "promtool (apt-get install prometheus; without it the rules are not checked)", err)
	return path
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

func TestAlertRulesPassPromtool(t *testing.T) {
	pt := promtool(t)
	run(t, ".", pt, "check", "rules", rulesFile)
	run(t, "prometheus", pt, "test", "rules", filepath.Base(rulesTestFile))
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	return rf
}

func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	rf := readRules(t)
	out := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	return out
}

// dashboardExprs returns every query of the dashboard by panel title, checking the JSON's shape.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: no uid, title or panels", dashboardFile)
	}
	out := map[string]string{}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"datasource", "target", "kind"} {
		if !vars[want] {
			t.Errorf("%s: no $%s variable", dashboardFile, want)
		}
	}
	for _, a := range d.Annotations.List {
		if strings.TrimSpace(a.Expr) == "" {
			t.Errorf("annotation %q has no query", a.Name)
		}
		out["annotation "+a.Name] = a.Expr
	}
	if len(d.Annotations.List) < 3 {
		t.Errorf("%s: %d annotations, want those of pauses, parks and replays", dashboardFile, len(d.Annotations.List))
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q query %s is empty", p.Title, q.RefID)
			}
			out["panel "+p.Title+" "+q.RefID] = q.Expr
		}
	}
	return out
}

// The dashboard's queries parse as PromQL: they are checked by promtool as recording rules,
// with Grafana's $__rate_interval given a value.
func TestDashboardQueriesParse(t *testing.T) {
	pt := promtool(t)
	exprs := dashboardExprs(t)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range exprs {
			if !yield(k) {
				return
			}
		}
	})
	var rf struct {
		Groups []map[string]any `yaml:"groups"`
	}
	var rules []map[string]string
	for i, k := range keys {
		rules = append(rules, map[string]string{"record": "dashboard:query" + string(rune('a'+i/26)) + string(rune('a'+i%26)),
			"expr": strings.ReplaceAll(exprs[k], "$__rate_interval", "5m")})
	}
	rf.Groups = append(rf.Groups, map[string]any{"name": "dashboard", "rules": rules})
	b, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", pt, "check", "rules", path)
}

var metricName = regexp.MustCompile(`\bmsgx_[a-z0-9_]+`)

// Every msgx metric the rules and the dashboard query is one msgx serves (a histogram's
// series by their _bucket, _sum and _count names), or one pending on a named issue; every
// metric msgx serves is queried somewhere and listed in docs/operations.md.
func TestDeployNamesOnlyRegisteredMetrics(t *testing.T) {
	names := registered(t)
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			known[n+suffix] = true
		}
	}
	used := map[string]bool{}
	all := alertExprs(t)
	for k, v := range dashboardExprs(t) {
		all[k] = v
	}
	if len(all) < 10 {
		t.Fatalf("only %d queries found", len(all))
	}
	for where, expr := range all {
		for _, name := range metricName.FindAllString(expr, -1) {
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] = true
			if !known[name] && pending[name] == "" {
				t.Errorf("%s queries %s, which msgx does not serve", where, name)
			}
		}
	}
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !used[n] && aliases[n] == "" {
			t.Errorf("%s is in neither the alert rules nor the dashboard", n)
		}
		if !strings.Contains(string(readme), "`"+n+"`") && !strings.Contains(string(readme), "`"+n+"{") {
			t.Errorf("docs/operations.md does not list %s", n)
		}
	}
}

// anchor is the anchor GitHub gives a Markdown heading: lower case, spaces as dashes, and
// punctuation but dashes and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every alert has a runbook_url that names a heading of docs/runbook.md, the alert's own.
func TestAlertsLinkTheirRunbook(t *testing.T) {
	doc, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[anchor(strings.TrimLeft(h, "#"))] = true
		}
	}
	n := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			url := r.Annotations["runbook_url"]
			want := "docs/runbook.md#" + anchor(r.Alert)
			if url != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, url, want)
			}
			if !anchors[anchor(r.Alert)] {
				t.Errorf("alert %s: docs/runbook.md has no heading %q", r.Alert, r.Alert)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d alerts found", n)
	}
}
