package chartcheck

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	release    = "customer-api"
	namespace  = "customer-api"
	devValues  = ChartDir + "/values-dev.yaml"
	prodValues = ChartDir + "/values-production.yaml"
)

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// root returns the repository root.
func root(t *testing.T) string {
	t.Helper()
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// helm returns the helm runner; without helm the test is skipped, except in CI (CI=true),
// where `make test` installs it first and its absence is a failure.
func helm(t *testing.T) Helm {
	t.Helper()
	r := root(t)
	helmOnce.Do(func() { helmBin, helmErr = FindHelm(r) })
	if helmErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(helmErr)
		}
		t.Skip(helmErr)
	}
	return Helm{Bin: helmBin, Root: r}
}

// production values with the Secrets made by the chart instead of existing ones, so the
// chart's Secret path with external PostgreSQL and Kafka is rendered too.
var inlineSecrets = []string{
	"gateway.existingSecret=", "services.topics.existingSecret=", "services.pages.existingSecret=",
	"services.persons.existingSecret=", "services.assets.existingSecret=", "services.webhooks.existingSecret=",
	"secrets.cursorSecret=prod-cursor-secret-0123456789",
	"secrets.keyHashPepper=prod-pepper-0123456789abcdef0123456789abcdef",
	"secrets.adminToken=prod-admin-token-0123456789",
	"secrets.internalAuthSecret=prod-internal-auth-secret-0123456789abcdef",
	"secrets.webhookSecretsKeys=k1:cHJvZC13ZWJob29rLXNlY3JldHMta2V5LTAxMjM0NTY=",
	"externalKafka.password=kafka-password",
	"services.assets.secretEnv.SIGNING_KEY=prod-signing-key-0123456789abcdef0123456789",
	"services.assets.secretEnv.ASSETS_S3_ACCESS_KEY_ID=AKIAEXAMPLE",
	"services.assets.secretEnv.ASSETS_S3_SECRET_ACCESS_KEY=secret",
}

func init() {
	for _, d := range []string{"gateway", "topics", "pages", "persons", "assets", "webhooks"} {
		inlineSecrets = append(inlineSecrets,
			fmt.Sprintf("externalDatabase.urls.%s=postgres://%s:pw@db.example.com:5432/%s?sslmode=verify-full", d, d, d))
	}
}

var prodMetricsFrom = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
	MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}

var prodSecrets = []string{"customer-api-gateway", "customer-api-topics", "customer-api-pages",
	"customer-api-persons", "customer-api-assets", "customer-api-webhooks"}

func TestHelmLint(t *testing.T) {
	h := helm(t)
	for _, values := range []string{devValues, prodValues} {
		t.Run(values, func(t *testing.T) {
			out, err := h.Lint(values)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(string(out), "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// TestRenderedManifests renders the chart with each value set, decodes every object
// strictly against the Kubernetes API types, and applies the rules.
func TestRenderedManifests(t *testing.T) {
	h := helm(t)
	cases := []struct {
		name   string
		values []string
		set    []string
		rules  Rules
		check  func(t *testing.T, m *Manifest)
	}{
		{name: "development", values: []string{devValues}, check: checkDev},
		{name: "production", values: []string{prodValues},
			rules: Rules{ExternalSecrets: prodSecrets, MetricsFrom: prodMetricsFrom}, check: checkProd},
		{name: "production with chart-made secrets", values: []string{prodValues}, set: inlineSecrets,
			rules: Rules{MetricsFrom: prodMetricsFrom}, check: checkProdInline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := h.Template(release, namespace, c.values, c.set...)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range Check(m, c.rules) {
				t.Error(err)
			}
			checkCommon(t, m)
			c.check(t, m)
		})
	}
}

// checkCommon: one Deployment per deployable, the gateway routed to every service's
// Service, and the helm test hook aimed at the gateway's /readyz.
func checkCommon(t *testing.T, m *Manifest) {
	t.Helper()
	ds, err := Deployables(root(t))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]*appsv1.Deployment{}
	for _, d := range m.Deployments() {
		deps[d.Spec.Template.Labels[ComponentLabel]] = d
	}
	for _, d := range ds {
		if deps[d.Name] == nil {
			t.Errorf("no Deployment for %s", d.Name)
		}
	}
	services := map[string]*corev1.Service{}
	for _, s := range m.Services() {
		services[s.Name] = s
	}
	gw := deps["gateway"]
	if gw == nil {
		t.Fatal("no gateway")
	}
	env := envOf(gw.Spec.Template.Spec.Containers[0])
	for name := range deps {
		if name == "gateway" {
			continue
		}
		url := env["UPSTREAM_"+strings.ToUpper(name)+"_URL"]
		svc := services[release+"-"+name]
		if svc == nil || url != "http://"+svc.Name || svc.Spec.Ports[0].Port != 80 {
			t.Errorf("gateway upstream of %s is %q; Service %v", name, url, svc)
		}
	}
	for name, d := range deps {
		ctr := d.Spec.Template.Spec.Containers[0]
		e := envOf(ctr)
		if e["HTTP_ADDR"] != ":8080" {
			t.Errorf("%s: HTTP_ADDR %q", d.Name, e["HTTP_ADDR"])
		}
		if name == "gateway" {
			continue // its metrics are on the admin listener
		}
		// Metrics on their own listener and port, which the Service carries for scraping.
		ports := map[string]int32{}
		for _, p := range ctr.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if e["METRICS_ADDR"] != ":9090" || ports["metrics"] != 9090 || ports["http"] != 8080 {
			t.Errorf("%s: METRICS_ADDR %q, container ports %v: want the metrics listener on port metrics (9090)", d.Name, e["METRICS_ADDR"], ports)
		}
		svc := services[release+"-"+name]
		if svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
			return p.Name == "metrics" && p.TargetPort.String() == "metrics"
		}) {
			t.Errorf("%s: the Service %s has no port metrics (targetPort metrics) for the ServiceMonitor", name, release+"-"+name)
		}
	}
	if env["ADMIN_ADDR"] != ":8081" {
		t.Errorf("gateway ADMIN_ADDR %q", env["ADMIN_ADDR"])
	}
	pods := m.Pods()
	gwPort := int32(0) // the gateway's public Service port: 80, or 443 behind the production example's TLS load balancer
	if svc := services[release+"-gateway"]; svc != nil {
		gwPort = svc.Spec.Ports[0].Port
	}
	if len(pods) != 1 || pods[0].Annotations["helm.sh/hook"] != "test" ||
		!strings.Contains(strings.Join(pods[0].Spec.Containers[0].Command, " "), fmt.Sprintf("http://%s-gateway:%d/readyz", release, gwPort)) {
		t.Errorf("helm test hook: %+v", pods)
	}
}

func checkDev(t *testing.T, m *Manifest) {
	if n := len(m.StatefulSets()); n != 2 {
		t.Errorf("%d StatefulSets, want PostgreSQL and Kafka", n)
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range m.Secrets() {
		secrets[s.Name] = s
	}
	for _, d := range m.Deployments() {
		name := d.Spec.Template.Labels[ComponentLabel]
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "customerapi/"+name+":0.1.0" {
			t.Errorf("%s: image %s", name, img)
		}
		init := d.Spec.Template.Spec.InitContainers
		if len(init) != 1 || init[0].Name != "wait-for-postgresql" {
			t.Errorf("%s: init containers %v", name, init)
		}
		s := secrets[d.Name]
		if s == nil || !strings.HasPrefix(s.StringData["DATABASE_URL"], "postgres://postgres:dev-postgres-password@customer-api-postgresql:5432/"+name+"?") {
			t.Errorf("%s: secret %v", name, s)
		}
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if name != "gateway" && env["KAFKA_BROKERS"] != "customer-api-kafka:9092" {
			t.Errorf("%s: KAFKA_BROKERS %q", name, env["KAFKA_BROKERS"])
		}
	}
	if s := secrets["customer-api-assets"]; s == nil || s.StringData["SIGNING_KEY"] == "" {
		t.Error("assets has no SIGNING_KEY")
	}
	if s := secrets["customer-api-gateway"]; s == nil || s.StringData["ADMIN_TOKEN"] == "" || s.StringData["KEY_HASH_PEPPER"] == "" {
		t.Error("gateway secrets missing")
	}
	checkSharedInternalSecret(t, m)
}

// checkSharedInternalSecret: every chart-made Secret holds the same INTERNAL_AUTH_SECRET
// (the gateway signs with it, the services verify with it).
func checkSharedInternalSecret(t *testing.T, m *Manifest) {
	t.Helper()
	values := map[string]bool{}
	for _, s := range m.Secrets() {
		if s.Labels[ComponentLabel] == "postgresql" {
			continue
		}
		values[s.StringData["INTERNAL_AUTH_SECRET"]] = true
	}
	if len(values) != 1 || values[""] {
		t.Errorf("INTERNAL_AUTH_SECRET differs between deployables or is missing: %d values", len(values))
	}
}

// TestInternalSecretChangeRollsPods: the pods' checksum annotation covers
// INTERNAL_AUTH_SECRET, so changing it restarts every deployable with the new value.
func TestInternalSecretChangeRollsPods(t *testing.T) {
	h := helm(t)
	changed, err := h.Template(release, namespace, []string{devValues}, "secrets.internalAuthSecret="+strings.Repeat("z", 32))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := h.Template(release, namespace, []string{devValues})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dev.Deployments() {
		if d.Spec.Template.Annotations["checksum/secret"] == changed.Deployments()[i].Spec.Template.Annotations["checksum/secret"] {
			t.Errorf("%s: changing secrets.internalAuthSecret does not change the pods' checksum/secret", d.Name)
		}
	}
}

func checkProd(t *testing.T, m *Manifest) {
	if len(m.StatefulSets()) != 0 || len(m.Secrets()) != 0 {
		t.Errorf("production renders %d StatefulSets and %d Secrets", len(m.StatefulSets()), len(m.Secrets()))
	}
	if len(m.HPAs()) != len(m.Deployments()) {
		t.Errorf("%d HPAs for %d Deployments", len(m.HPAs()), len(m.Deployments()))
	}
	services := map[string]*corev1.Service{}
	for _, s := range m.Services() {
		services[s.Name] = s
	}
	if len(m.ServiceMonitors()) != len(m.Deployments()) {
		t.Errorf("%d ServiceMonitors", len(m.ServiceMonitors()))
	}
	for _, sm := range m.ServiceMonitors() {
		found := false
		for _, s := range m.Services() {
			if !selects(&sm.Spec.Selector, s.Labels) {
				continue
			}
			for _, p := range s.Spec.Ports {
				found = found || p.Name == sm.Spec.Endpoints[0].Port
			}
		}
		if !found {
			t.Errorf("ServiceMonitor %s selects no Service with port %s", sm.Name, sm.Spec.Endpoints[0].Port)
		}
	}
	for _, d := range m.Deployments() {
		if len(d.Spec.Template.Spec.InitContainers) != 0 {
			t.Errorf("%s: init containers without the in-chart PostgreSQL", d.Name)
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		if !strings.HasPrefix(img, "registry.example.com/customerapi/") {
			t.Errorf("%s: image %s", d.Name, img)
		}
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if d.Name != release+"-gateway" && (env["KAFKA_TLS"] != "true" || env["KAFKA_SASL_MECHANISM"] != "scram-sha-512" ||
			!strings.Contains(env["KAFKA_BROKERS"], ",") || env["KAFKA_MAX_MESSAGE_BYTES"] != "1000000") {
			t.Errorf("%s: kafka settings %v", d.Name, env)
		}
	}
	if svc := services[release+"-gateway"]; svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("public gateway Service: %v", svc)
	}
}

func checkProdInline(t *testing.T, m *Manifest) {
	secrets := map[string]*corev1.Secret{}
	for _, s := range m.Secrets() {
		secrets[s.Name] = s
	}
	for _, d := range m.Deployments() {
		name := d.Spec.Template.Labels[ComponentLabel]
		s := secrets[d.Name]
		if s == nil || !strings.HasPrefix(s.StringData["DATABASE_URL"], "postgres://"+name+":pw@db.example.com") {
			t.Errorf("%s: secret %v", name, s)
			continue
		}
		if name != "gateway" && s.StringData["KAFKA_PASSWORD"] != "kafka-password" {
			t.Errorf("%s: no KAFKA_PASSWORD", name)
		}
	}
	if s := secrets[release+"-assets"]; s == nil || s.StringData["ASSETS_S3_SECRET_ACCESS_KEY"] != "secret" {
		t.Error("assets secretEnv missing")
	}
	checkSharedInternalSecret(t, m)
}

// TestBadValuesFail: values.schema.json and the templates reject bad values at install.
func TestBadValuesFail(t *testing.T) {
	h := helm(t)
	cases := []struct {
		name   string
		values []string
		set    []string
		want   string
	}{
		{"chart defaults alone (no Kafka)", nil, nil, "externalKafka/brokers"},
		{"production without a database URL", []string{prodValues}, []string{"services.topics.existingSecret="}, "externalDatabase.urls.topics is required"},
		{"production without a cursor secret", []string{prodValues}, []string{"services.topics.existingSecret=",
			"externalDatabase.urls.topics=postgres://t@db/topics"}, "secrets.cursorSecret is required (or topics.existingSecret)"},
		{"gateway without pepper", []string{prodValues}, []string{"gateway.existingSecret=", "secrets.cursorSecret=0123456789abcdef",
			"secrets.internalAuthSecret=" + strings.Repeat("i", 32),
			"externalDatabase.urls.gateway=postgres://g@db/gateway"}, "secrets.keyHashPepper and secrets.adminToken are required"},
		{"production without an internal auth secret", []string{prodValues}, []string{"services.topics.existingSecret=",
			"secrets.cursorSecret=0123456789abcdef", "externalDatabase.urls.topics=postgres://t@db/topics"},
			"secrets.internalAuthSecret is required (or topics.existingSecret)"},
		{"short internal auth secret", []string{devValues}, []string{"secrets.internalAuthSecret=short"}, "internalAuthSecret"},
		{"short extra internal auth secret", []string{devValues}, []string{"secrets.internalAuthExtraSecret=short"}, "internalAuthExtraSecret"},
		{"unknown top-level key", []string{devValues}, []string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{"misspelt deployable key", []string{devValues}, []string{"gateway.replica=3"}, "additional properties 'replica' not allowed"},
		{"replicas not a number", []string{devValues}, []string{"services.topics.replicas=many"}, "at '/services/topics/replicas': got string, want integer"},
		{"zero replicas", []string{devValues}, []string{"defaults.replicas=0"}, "at '/defaults/replicas'"},
		{"short cursor secret", []string{devValues}, []string{"secrets.cursorSecret=short"}, "cursorSecret"},
		{"short pepper", []string{devValues}, []string{"secrets.keyHashPepper=short"}, "keyHashPepper"},
		{"bad pull policy", []string{devValues}, []string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{"bad log level", []string{devValues}, []string{"logLevel=verbose"}, "logLevel"},
		{"gateway cannot be disabled", []string{devValues}, []string{"gateway.enabled=false"}, "at '/gateway': 'not' failed"},
		{"service without enabled", []string{devValues}, []string{"services.billing.replicas=1"}, "at '/services/billing': missing property 'enabled'"},
		{"bad env name", []string{devValues}, []string{"services.topics.env.lower=1"}, "invalid propertyName 'lower'"},
		{"bad resource quantity", []string{devValues}, []string{"defaults.resources.limits.memory=lots"}, "'lots' does not match pattern"},
		{"dev PostgreSQL without password", []string{devValues}, []string{"postgresql.password="}, "at '/postgresql/password': minLength"},
		{"external Kafka without brokers", []string{devValues}, []string{"kafka.enabled=false"}, "at '/externalKafka/brokers': minItems"},
		{"external database without URL", []string{devValues}, []string{"postgresql.enabled=false"}, "externalDatabase.urls.gateway is required"},
		{"bad broker address", []string{prodValues}, []string{"externalKafka.brokers[0]=kafka"}, "'kafka' does not match pattern"},
		{"message limit too small", []string{prodValues}, []string{"externalKafka.maxMessageBytes=100"}, "at '/externalKafka/maxMessageBytes'"},
		{"bad database URL", []string{prodValues}, []string{"externalDatabase.urls.topics=mysql://x"}, "'mysql://x' does not match pattern"},
		{"bad image tag", []string{devValues}, []string{"image.tag=a b"}, "at '/image/tag'"},
		{"bad metrics peer", []string{devValues}, []string{"networkPolicy.metricsFrom[0].pods=x"}, "additional properties 'pods' not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.Template(release, namespace, c.values, c.set...)
			if err == nil {
				t.Fatalf("rendered, want an error mentioning %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error does not mention %q:\n%v", c.want, err)
			}
		})
	}
}

// TestRulesCatchViolations: each rule fails on a manifest that breaks it, so a passing
// check means something.
func TestRulesCatchViolations(t *testing.T) {
	h := helm(t)
	cases := []struct {
		name   string
		mutate func(m *Manifest)
		want   string
	}{
		{"no readiness probe", func(m *Manifest) { m.Deployments()[1].Spec.Template.Spec.Containers[0].ReadinessProbe = nil }, "readiness"},
		{"writable root filesystem", func(m *Manifest) {
			f := false
			m.Deployments()[0].Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &f
		}, "readOnlyRootFilesystem"},
		{"privilege escalation in an init container", func(m *Manifest) {
			tr := true
			m.Deployments()[2].Spec.Template.Spec.InitContainers[0].SecurityContext.AllowPrivilegeEscalation = &tr
		}, "allowPrivilegeEscalation"},
		{"no memory limit", func(m *Manifest) {
			delete(m.StatefulSets()[0].Spec.Template.Spec.Containers[0].Resources.Limits, "memory")
		}, "memory limit"},
		{"root pod", func(m *Manifest) {
			f := false
			m.Pods()[0].Spec.SecurityContext.RunAsNonRoot = &f
		}, "runAsNonRoot"},
		{"latest image", func(m *Manifest) { m.Deployments()[0].Spec.Template.Spec.Containers[0].Image = "customerapi/gateway" }, "pinned tag"},
		{"no PDB", func(m *Manifest) { dropKind(m, "PodDisruptionBudget") }, "PodDisruptionBudgets select"},
		{"no NetworkPolicy", func(m *Manifest) { dropKind(m, "NetworkPolicy") }, "no NetworkPolicy"},
		{"service open to everyone", func(m *Manifest) {
			for _, np := range m.NetworkPolicies() {
				if np.Name == release+"-topics" {
					np.Spec.Ingress[0].From = nil
				}
			}
		}, "admits everyone"},
		{"service open to another namespace", func(m *Manifest) {
			for _, np := range m.NetworkPolicies() {
				if np.Name == release+"-topics" {
					np.Spec.Ingress[0].From = append(np.Spec.Ingress[0].From, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}})
				}
			}
		}, "other than the gateway"},
		{"admin port on the public Service", func(m *Manifest) {
			for _, s := range m.Services() {
				if s.Name == release+"-gateway" {
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 8081, TargetPort: intstr.FromString("admin")})
				}
			}
		}, "admin port"},
		{"missing Secret", func(m *Manifest) { dropKind(m, "Secret") }, "reads Secret"},
		{"local asset files on two replicas", func(m *Manifest) {
			for _, d := range m.Deployments() {
				if d.Name == release+"-assets" {
					two := int32(2)
					d.Spec.Replicas = &two
				}
			}
		}, "more than one replica"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := h.Template(release, namespace, []string{devValues})
			if err != nil {
				t.Fatal(err)
			}
			if errs := Check(m, Rules{}); len(errs) > 0 {
				t.Fatalf("clean manifest fails: %v", errs)
			}
			c.mutate(m)
			errs := Check(m, Rules{})
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), c.want) }) {
				t.Fatalf("no error mentions %q: %v", c.want, errs)
			}
		})
	}
}

// TestMetricsPeersRuleCatchesViolations: with scrapers configured (the production values),
// the network rules fail a manifest that lets them reach a service's API port, or the
// gateway its metrics port.
func TestMetricsPeersRuleCatchesViolations(t *testing.T) {
	h := helm(t)
	rules := Rules{ExternalSecrets: prodSecrets, MetricsFrom: prodMetricsFrom}
	topics := func(m *Manifest) *networkingv1.NetworkPolicy {
		for _, np := range m.NetworkPolicies() {
			if np.Name == release+"-topics" && len(np.Spec.Ingress) == 2 {
				return np
			}
		}
		t.Fatal("no NetworkPolicy for topics with a gateway rule and a metrics rule")
		return nil
	}
	gateway := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		"app.kubernetes.io/name": "customer-api", "app.kubernetes.io/instance": release, ComponentLabel: "gateway"}}}
	cases := []struct {
		name   string
		mutate func(np *networkingv1.NetworkPolicy)
		want   string
	}{
		{"scrapers on the API port", func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From = append(np.Spec.Ingress[0].From, prodMetricsFrom...)
		}, "admits metrics peers to ports other than metrics"},
		{"scrapers on every port", func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[1].Ports = nil },
			"admits metrics peers to ports other than metrics"},
		{"gateway on the metrics port", func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[1].From = append(np.Spec.Ingress[1].From, gateway)
		}, "admits the gateway to ports other than http"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := h.Template(release, namespace, []string{prodValues})
			if err != nil {
				t.Fatal(err)
			}
			if errs := Check(m, rules); len(errs) > 0 {
				t.Fatalf("clean manifest fails: %v", errs)
			}
			c.mutate(topics(m))
			errs := Check(m, rules)
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), c.want) }) {
				t.Fatalf("no error mentions %q: %v", c.want, errs)
			}
		})
	}
}

func dropKind(m *Manifest, kind string) {
	m.Objects = slices.DeleteFunc(m.Objects, func(o Object) bool { return o.Kind == kind })
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}
