package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

const opsValues = "deploy/chartcheck/testdata/values-ops.yaml"

// renderRule renders the PrometheusRule with the development values and the defaults of
// prometheusRule.
func renderRule(t *testing.T) *monitoringv1.PrometheusRule {
	t.Helper()
	m, err := helm(t).Template(release, namespace, []string{devValues}, "prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	rules := m.PrometheusRules()
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	return rules[0]
}

// alerts lists the alerting rules of a PrometheusRule.
func alerts(pr *monitoringv1.PrometheusRule) []monitoringv1.Rule {
	var out []monitoringv1.Rule
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestOpsManifests renders the production values with everything of the operators'
// pack switched on (testdata/values-ops.yaml): every object decodes strictly into its
// published Go type (the PrometheusRule into the Prometheus Operator's, the HTTPRoute into
// Gateway API's), the manifest keeps every rule of the chart, and each new object points
// at what exists.
func TestOpsManifests(t *testing.T) {
	h := helm(t)
	m, err := h.Template(release, namespace, []string{prodValues, opsValues})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range Check(m, Rules{ExternalSecrets: append(slices.Clone(prodSecrets), "customer-api-otel"),
		MetricsFrom: prodMetricsFrom}) {
		t.Error(err)
	}
	services := map[string]*corev1.Service{}
	for _, s := range m.Services() {
		services[s.Name] = s
	}
	gw := services[release+"-gateway"]
	if gw == nil {
		t.Fatal("no gateway Service")
	}

	// The Ingress reaches the gateway's public port, with TLS.
	ings := m.Ingresses()
	if len(ings) != 1 {
		t.Fatalf("%d Ingresses", len(ings))
	}
	ing := ings[0]
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" ||
		len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "api-example-com-tls" {
		t.Errorf("Ingress class %v, TLS %+v", ing.Spec.IngressClassName, ing.Spec.TLS)
	}
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != gw.Name || b.Port.Name != "http" || !slices.ContainsFunc(gw.Spec.Ports, func(sp corev1.ServicePort) bool {
				return sp.Name == "http"
			}) {
				t.Errorf("Ingress path %s goes to %+v, not the gateway's public port", p.Path, b)
			}
		}
	}

	// The HTTPRoute reaches the gateway's public port through the HTTPS listener; the
	// redirect route answers plain HTTP with a redirect to https.
	routes := map[string]*gatewayv1.HTTPRoute{}
	for _, r := range m.HTTPRoutes() {
		routes[r.Name] = r
	}
	route := routes[release]
	if route == nil || len(route.Spec.Rules) != 1 || len(route.Spec.Rules[0].BackendRefs) != 1 {
		t.Fatalf("HTTPRoute: %+v", route)
	}
	ref := route.Spec.Rules[0].BackendRefs[0]
	if string(ref.Name) != gw.Name || ref.Port == nil || int32(*ref.Port) != gw.Spec.Ports[0].Port {
		t.Errorf("HTTPRoute goes to %s:%v, not the gateway Service %s:%d", ref.Name, ref.Port, gw.Name, gw.Spec.Ports[0].Port)
	}
	if pr := route.Spec.ParentRefs; len(pr) != 1 || pr[0].SectionName == nil || *pr[0].SectionName != "https" {
		t.Errorf("HTTPRoute parents %+v, want the https listener", pr)
	}
	redirect := routes[release+"-https-redirect"]
	if redirect == nil || len(redirect.Spec.Rules) != 1 || len(redirect.Spec.Rules[0].BackendRefs) != 0 ||
		redirect.Spec.Rules[0].Filters[0].RequestRedirect == nil ||
		*redirect.Spec.Rules[0].Filters[0].RequestRedirect.Scheme != "https" ||
		*redirect.Spec.ParentRefs[0].SectionName != "http" {
		t.Errorf("redirect HTTPRoute: %+v", redirect)
	}

	// Pod settings of every deployable; the assets service's cloud role and extra env.
	for _, d := range m.Deployments() {
		spec := d.Spec.Template.Spec
		if spec.PriorityClassName != "customer-api" || d.Spec.Template.Labels["cost-center"] != "platform" {
			t.Errorf("%s: priorityClassName %q, pod labels %v", d.Name, spec.PriorityClassName, d.Spec.Template.Labels)
		}
		if d.Name != release+"-assets" {
			continue
		}
		c := spec.Containers[0]
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "OTEL_RESOURCE_ATTRIBUTES" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil
		}) || !slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
			return e.SecretRef != nil && e.SecretRef.Name == "customer-api-otel"
		}) {
			t.Errorf("assets: extraEnv/extraEnvFrom missing: %+v %+v", c.Env, c.EnvFrom)
		}
	}
	for _, o := range m.Objects {
		if sa, ok := o.Obj.(*corev1.ServiceAccount); ok && sa.Name == release+"-assets" &&
			sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::123456789012:role/customer-api-assets" {
			t.Errorf("assets ServiceAccount annotations %v", sa.Annotations)
		}
	}

	// The dashboards, labelled for the sidecar; each a dashboard with panels and queries.
	var cms []*corev1.ConfigMap
	for _, cm := range m.ConfigMaps() {
		if cm.Labels["grafana_dashboard"] == "1" {
			cms = append(cms, cm)
		}
	}
	if len(cms) != 1 || cms[0].Annotations["grafana_folder"] != "Customer API" {
		t.Fatalf("%d dashboard ConfigMaps, want 1 with the folder annotation", len(cms))
	}
	var keys []string
	for k, v := range cms[0].Data {
		keys = append(keys, k)
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal([]byte(v), &d); err != nil || d.UID == "" || len(d.Panels) == 0 {
			t.Errorf("%s: not a dashboard (%v)", k, err)
		}
		for i, p := range d.Panels {
			if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
				t.Errorf("%s: panel %d has no query", k, i)
			}
		}
	}
	slices.Sort(keys)
	var want []string
	for _, n := range DashboardNames() {
		want = append(want, "customer-api-"+n)
	}
	if !slices.Equal(keys, want) {
		t.Errorf("dashboards %v, want %v", keys, want)
	}

	// The alerts, with the extra labels, each linked to its runbook.
	prs := m.PrometheusRules()
	if len(prs) != 1 || prs[0].Labels["release"] != "prometheus" {
		t.Fatalf("PrometheusRules: %d", len(prs))
	}
	for _, a := range alerts(prs[0]) {
		if a.Labels["team"] != "platform" {
			t.Errorf("%s: labels %v lack the additional alert labels", a.Alert, a.Labels)
		}
	}
}

var heading = regexp.MustCompile(`(?m)^## (\S+)\s*$`)

// TestAlertsHaveRunbooks: every alert has a severity, a summary, a description and a
// runbook_url whose anchor is a section of docs/runbooks.md, and every section there is
// an alert's, so the two cannot drift apart; every dashboard panel a runbook sends the
// reader to (its title in italics) is a panel of the chart's dashboards.
func TestAlertsHaveRunbooks(t *testing.T) {
	pr := renderRule(t)
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		sections[m[1]] = true
	}
	seen := map[string]bool{}
	for _, a := range alerts(pr) {
		seen[a.Alert] = true
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q", a.Alert, s)
		}
		if a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
			t.Errorf("%s: no summary or description", a.Alert)
		}
		want := "https://github.com/customerapi/platform/blob/main/docs/runbooks.md#" + strings.ToLower(a.Alert)
		if a.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", a.Alert, a.Annotations["runbook_url"], want)
		}
		if !sections[a.Alert] {
			t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", a.Alert, a.Alert)
		}
		if !strings.Contains(a.Expr.String(), `namespace="`+namespace+`"`) {
			t.Errorf("%s: the expression is not scoped to the release's namespace: %s", a.Alert, a.Expr.String())
		}
	}
	for s := range sections {
		if !seen[s] {
			t.Errorf("docs/runbooks.md has a section %s, which is no alert of the chart", s)
		}
	}

	// The dashboard panels the runbooks send operators to (in italics) exist.
	files, err := DashboardFiles()
	if err != nil {
		t.Fatal(err)
	}
	panels := map[string]bool{}
	for name, b := range files {
		var d struct {
			Panels []struct {
				Title string `json:"title"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range d.Panels {
			panels[p.Title] = true
		}
	}
	text := bold.ReplaceAllString(codeSpan.ReplaceAllString(string(b), ""), "")
	named := 0
	for _, m := range italic.FindAllStringSubmatch(text, -1) {
		named++
		if title := strings.Join(strings.Fields(m[1]), " "); !panels[title] {
			t.Errorf("docs/runbooks.md names the panel *%s*, which no dashboard of the chart has", title)
		}
	}
	if named == 0 {
		t.Error("docs/runbooks.md names no dashboard panel in italics")
	}
}

var (
	// codeSpan is inline code or a fenced block of Markdown, left out of the italics search.
	codeSpan = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	// bold is **text**, left out before the italics search.
	bold = regexp.MustCompile(`\*\*[^*]+\*\*`)
	// italic is *text*: in docs/runbooks.md, a dashboard panel's title.
	italic = regexp.MustCompile(`\*([^*\s](?:[^*]*[^*\s])?)\*`)
)

// promtool returns the path of promtool, skipping the test without it outside CI (`make
// test` installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found: `make ops-deps` installs Debian's prometheus package")
		}
		t.Skip("promtool not found: run `make ops-deps`")
	}
	return p
}

// alertTests is the part of testdata/alerts_test.yaml that TestAlertRules checks covers
// every alert.
type alertTests struct {
	Tests []struct {
		Name           string `json:"name"`
		AlertRuleTests []struct {
			EvalTime  string `json:"eval_time"`
			AlertName string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertRules runs Prometheus's own checks on the alerts as the chart renders them:
// `promtool check rules`, then `promtool test rules` with testdata/alerts_test.yaml, in
// which every alert fires from synthetic series (its labels and rendered annotations
// compared) and then resolves. An alert without a firing and a later resolving case
// there fails the test.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	pr := renderRule(t)
	rules, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "alerts.rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}

	var at alertTests
	if err := yaml.Unmarshal(tests, &at); err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts(pr) {
		covered := false
		for _, tc := range at.Tests {
			fired := ""
			for _, c := range tc.AlertRuleTests {
				if c.AlertName != a.Alert {
					continue
				}
				switch {
				case len(c.ExpAlerts) > 0:
					fired = c.EvalTime
				case fired != "" && evalAfter(t, c.EvalTime, fired):
					covered = true
				}
			}
		}
		if !covered {
			t.Errorf("%s: testdata/alerts_test.yaml has no case that fires it and a later one that resolves it", a.Alert)
		}
	}
}

func evalAfter(t *testing.T, a, b string) bool {
	t.Helper()
	ma, err := parseMinutes(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := parseMinutes(b)
	if err != nil {
		t.Fatal(err)
	}
	return ma > mb
}

func parseMinutes(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%dm", &n); err != nil {
		return 0, fmt.Errorf("eval_time %q: use whole minutes", s)
	}
	return n, nil
}

// TestDashboardsAreGenerated: the chart's dashboards are what their definitions make
// (`make dashboards` regenerates them).
func TestDashboardsAreGenerated(t *testing.T) {
	files, err := DashboardFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root(t), DashboardsDir)
	onDisk, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(onDisk) != len(files) {
		t.Errorf("%d dashboards in %s, %d defined: run `make dashboards`", len(onDisk), DashboardsDir, len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s differs from its definition: run `make dashboards`", DashboardsDir, name)
		}
	}
}

// TestOpsBadValuesFail: values of the operators' pack that would not work are refused at
// install.
func TestOpsBadValuesFail(t *testing.T) {
	h := helm(t)
	for _, c := range []struct {
		name string
		set  []string
		want string
	}{
		{"pod label replacing a selector label", []string{"defaults.podLabels.app\\.kubernetes\\.io/name=x"}, "podLabels"},
		{"ingress path without a slash", []string{"ingress.enabled=true", "ingress.hosts[0].paths[0].path=api"}, "does not match pattern"},
		{"ingress without hosts", []string{"ingress.enabled=true", "ingress.hosts=null"}, "ingress"},
		{"route without a parent", []string{"httpRoute.enabled=true", "httpRoute.parentRefs=null"}, "httpRoute"},
		{"error ratio over 1", []string{"prometheusRule.thresholds.errorRatio=5"}, "errorRatio"},
		{"extra env without a name", []string{"defaults.extraEnv[0].value=x"}, "missing property 'name'"},
		{"unknown key of the rule", []string{"prometheusRule.severity=page"}, "additional properties 'severity' not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.Template(release, namespace, []string{devValues}, c.set...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error mentioning %q, got %v", c.want, err)
			}
		})
	}
}

// renderNotes renders the chart's NOTES.txt (helm template leaves it out: the test
// renders a copy of the chart in which it is an ordinary template).
func renderNotes(t *testing.T, h Helm, values []string, set ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(h.Root, ChartDir)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == filepath.Join("templates", "NOTES.txt") {
			// The notes as a named template, shown as a string in a ConfigMap.
			if err := os.WriteFile(filepath.Join(dir, "templates", "notes.yaml"), []byte(
				"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ include \"test.notes\" . | toJson }}\n"), 0o644); err != nil {
				return err
			}
			dst = filepath.Join(dir, "templates", "_notes.tpl")
			b = append(append([]byte(`{{- define "test.notes" -}}`+"\n"), b...), []byte("\n{{- end -}}\n")...)
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"template", release, dir, "--namespace", namespace, "--kube-version", KubeVersion,
		"--show-only", "templates/notes.yaml"}
	for _, v := range values {
		args = append(args, "-f", filepath.Join(h.Root, v))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := h.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(out, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["notes"]
}

// The install notes' admin example works when pasted: the token is read (from the
// chart-made Secret or the existing one) before the request uses it, and the request
// says it sends JSON (the admin API refuses a body without Content-Type: application/json).
func TestNotesAdminExampleWorks(t *testing.T) {
	h := helm(t)
	for _, c := range []struct {
		name   string
		values []string
		secret string
	}{
		{"chart-made secret", []string{devValues}, release + "-gateway"},
		{"existing secret", []string{prodValues}, "customer-api-gateway"},
	} {
		t.Run(c.name, func(t *testing.T) {
			notes := renderNotes(t, h, c.values)
			set := strings.Index(notes, "ADMIN_TOKEN=$(kubectl")
			use := strings.Index(notes, "Bearer $ADMIN_TOKEN")
			if set < 0 || use < 0 || set > use {
				t.Fatalf("ADMIN_TOKEN is used before it is set (or never set):\n%s", notes)
			}
			if !strings.Contains(notes, "get secret "+c.secret+" ") {
				t.Errorf("the token is not read from Secret %s:\n%s", c.secret, notes)
			}
			if !strings.Contains(notes[use:], "Content-Type: application/json") {
				t.Errorf("the admin request lacks Content-Type: application/json:\n%s", notes)
			}
		})
	}
	notes := renderNotes(t, h, []string{prodValues, opsValues})
	for _, want := range []string{"https://api.example.com/readyz", "get httproute " + release, "PrometheusRule " + release} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes with the operators' pack lack %q:\n%s", want, notes)
		}
	}
}
