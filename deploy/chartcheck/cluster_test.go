//go:build cluster

package chartcheck

// The chart on a real Kubernetes API server: `make test-cluster` starts the local control
// plane of deploy/cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok's fake node) and runs these tests against it with KUBECONFIG, KUBECTL, HELM and
// SKAFFOLD set. They prove what rendering and decoding cannot: that the API server
// accepts every object strictly (its own validation, defaulting, admission with the
// restricted Pod Security level), that helm's install, test, upgrade, rollback and
// uninstall work against it, and that the controllers turn the chart's objects into
// scheduled, Ready pods. kwok runs no container: what needs one (the development values'
// release with real pods, its upgrades, rollback and uninstall) is `make test-kind`'s;
// here are the production values, which cannot run on this machine's kind cluster (their
// PostgreSQL and Kafka are external), the strict dry runs and the refusals.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/customerapi/platform/libs/testwait"
)

// crdSources are the CustomResourceDefinitions the chart's objects need, from the Go
// modules that publish them (pinned here; downloaded through the module proxy into the
// module cache). The prometheus-operator release is the one the module proxy serves; its
// ServiceMonitor and PrometheusRule are monitoring.coreos.com/v1 like the API types
// chartcheck decodes with. The Gateway API's standard channel holds HTTPRoute.
var crdSources = []struct {
	module, version, dir string
	files                []string
}{
	{"github.com/prometheus-operator/prometheus-operator", "v0.85.0", "example/prometheus-operator-crd",
		[]string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml",
			"monitoring.coreos.com_prometheusrules.yaml"}},
	{"sigs.k8s.io/gateway-api", "v1.4.0", "config/crd/standard",
		[]string{"gateway.networking.k8s.io_gatewayclasses.yaml", "gateway.networking.k8s.io_gateways.yaml",
			"gateway.networking.k8s.io_httproutes.yaml"}},
}

// kube talks to the cluster through kubectl and helm, both built by the Makefile.
type kube struct {
	root, kubectl, helm, helmHome string
}

var (
	kubeOnce  sync.Once
	kubeState *kube
	kubeErr   error
)

// cluster returns the cluster client, installing the CRDs once. The tests run only
// through `make test-cluster`, which sets the variables.
func cluster(t *testing.T) *kube {
	t.Helper()
	kubeOnce.Do(func() { kubeState, kubeErr = setUpCluster() })
	if kubeErr != nil {
		t.Fatal(kubeErr)
	}
	return kubeState
}

func setUpCluster() (*kube, error) {
	r, err := Root()
	if err != nil {
		return nil, err
	}
	k := &kube{root: r, kubectl: os.Getenv("KUBECTL"), helm: os.Getenv("HELM")}
	if k.kubectl == "" || k.helm == "" || os.Getenv("KUBECONFIG") == "" {
		return nil, errors.New("KUBECONFIG, KUBECTL and HELM must be set: run `make test-cluster`")
	}
	// A private helm home: no repositories, plugins or caches of the user's leak in. Under
	// the control plane's directory when test.sh gives it (emptied by the next start).
	if dir := os.Getenv("CLUSTER_DIR"); dir != "" {
		k.helmHome = filepath.Join(dir, "helm-home")
	} else if k.helmHome, err = os.MkdirTemp("", "clustertest-helm-"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, src := range crdSources {
		dir, err := moduleDir(ctx, src.module, src.version)
		if err != nil {
			return nil, err
		}
		for _, f := range src.files {
			if _, err := k.run(ctx, nil, k.kubectl, "apply", "--server-side", "-f", filepath.Join(dir, src.dir, f)); err != nil {
				return nil, fmt.Errorf("CRD %s of %s@%s: %w", f, src.module, src.version, err)
			}
		}
	}
	if _, err := k.run(ctx, nil, k.kubectl, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		return nil, err
	}
	return k, nil
}

// moduleDir downloads a module version into the module cache and returns its directory.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %w %s %s", module, version, err, info.Error, out)
	}
	return info.Dir, nil
}

// cmdError is a failed command with its standard error.
type cmdError struct {
	cmd    string
	err    error
	stderr string
}

func (e *cmdError) Error() string { return fmt.Sprintf("%s: %v\n%s", e.cmd, e.err, e.stderr) }

// run runs a command in the repository root and returns its standard output; a failure
// carries standard error. Warnings on standard error of a command that succeeds are
// returned by runWarn.
func (k *kube) run(ctx context.Context, stdin []byte, bin string, args ...string) (string, error) {
	out, _, err := k.runWarn(ctx, stdin, bin, args...)
	return out, err
}

func (k *kube) runWarn(ctx context.Context, stdin []byte, bin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = k.root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+k.helmHome+"/cache", "HELM_CONFIG_HOME="+k.helmHome+"/config",
		"HELM_DATA_HOME="+k.helmHome+"/data")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		return o.String(), e.String(), &cmdError{cmd: filepath.Base(bin) + " " + strings.Join(args, " "), err: err, stderr: strings.TrimSpace(e.String())}
	}
	return o.String(), e.String(), nil
}

// kc runs kubectl, failing the test on error.
func (k *kube) kc(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := k.run(ctx, nil, k.kubectl, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// h runs helm with a time limit, returning its output and error.
func (k *kube) h(limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return k.run(ctx, nil, k.helm, args...)
}

// get decodes `kubectl get ... -o json` into v.
func (k *kube) get(t *testing.T, v any, args ...string) {
	t.Helper()
	out := k.kc(t, append(append([]string{"get"}, args...), "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("kubectl get %v: %v", args, err)
	}
}

// namespace creates a namespace of its own for a test, enforcing the restricted Pod
// Security level (and warning about it) as a hardened cluster would, waits for its default
// ServiceAccount (the controller manager makes it; pods and server-side dry runs of pods
// need it), and deletes it when the test passed.
func (k *kube) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := prefix + "-" + rand.String(5)
	doc := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/audit: restricted
`, ns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := k.run(ctx, []byte(doc), k.kubectl, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the default ServiceAccount of namespace "+ns, func() (bool, string) {
		_, err := k.run(ctx, nil, k.kubectl, "-n", ns, "get", "serviceaccount", "default")
		return err == nil, fmt.Sprint(err)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("namespace %s kept for a look (KUBECONFIG=%s)", ns, os.Getenv("KUBECONFIG"))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = k.run(ctx, nil, k.kubectl, "delete", "namespace", ns, "--wait=false")
	})
	return ns
}

// warnings returns the "Warning:" lines kubectl or helm printed: the API server's
// warnings (Pod Security, deprecated APIs, unknown fields dropped).
func warnings(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "Warning:") || strings.Contains(l, "warning:") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// dryRunApply applies a rendered manifest with a server-side apply dry run and strict field
// validation: the API server decodes, defaults, validates and admits every object (unknown
// fields and wrong types fail, Pod Security is checked) and stores nothing.
func (k *kube) dryRunApply(ns string, manifest []byte) (stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, stderr, err = k.runWarn(ctx, manifest, k.kubectl, "apply", "-n", ns, "--server-side", "--dry-run=server",
		"--validate=strict", "--field-manager=chartcheck", "-f", "-")
	return stderr, err
}

// template renders the chart (chartDir relative to the root, or absolute) with helm's own
// validation against the cluster (--validate), as release `release` in ns.
func (k *kube) template(ns, chartDir string, values []string, set ...string) ([]byte, error) {
	args := []string{"template", release, chartDir, "-n", ns, "--validate"}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := k.h(2*time.Minute, args...)
	return []byte(out), err
}

// TestClusterServerSideDryRun applies what every values file renders (and the production
// values with chart-made Secrets) with a strict server-side dry run, in a namespace that
// enforces the restricted Pod Security level: the API server must accept every object
// without a warning.
func TestClusterServerSideDryRun(t *testing.T) {
	k := cluster(t)
	files, err := filepath.Glob(filepath.Join(k.root, ChartDir, "values-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s: %v", ChartDir, err)
	}
	type valueSet struct {
		name   string
		values []string
		set    []string
	}
	// values-kind.yaml completes values-dev.yaml (the local images of a kind install):
	// it is applied over it, as make test-kind and skaffold's kind profile do.
	over := map[string]string{"values-kind.yaml": devValues}
	var sets []valueSet
	for _, f := range files {
		rel := ChartDir + "/" + filepath.Base(f)
		name, values := filepath.Base(f), []string{rel}
		if base, ok := over[name]; ok {
			name, values = filepath.Base(base)+" + "+name, []string{base, rel}
		}
		sets = append(sets, valueSet{name: name, values: values})
	}
	sets = append(sets, valueSet{name: "values-production.yaml with chart-made Secrets", values: []string{prodValues}, set: inlineSecrets})
	ns := k.namespace(t, "dryrun")
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			out, err := k.template(ns, ChartDir, s.values, s.set...)
			if err != nil {
				t.Fatalf("helm template --validate: %v", err)
			}
			stderr, err := k.dryRunApply(ns, out)
			if err != nil {
				t.Fatalf("the API server refuses what %s renders (strict server-side dry run): %v", s.name, err)
			}
			if w := warnings(stderr); len(w) > 0 {
				t.Errorf("the API server warns about what %s renders (a restricted namespace must admit every pod without a warning):\n%s",
					s.name, strings.Join(w, "\n"))
			}
		})
	}
}

// rollout is what the lifecycle tests read back of an installed release.
type rollout struct {
	// pods of each Deployment (by component): name -> image, checksum/secret annotation
	pods map[string]map[string]podInfo
}

type podInfo struct {
	image, checksum, uid string
}

// readRollout reads the pods of the release's Deployments, once every Deployment has
// rolled out completely (no old pods left, every pod Running and Ready on the fake node).
func (k *kube) readRollout(t *testing.T, ns string, m *Manifest) rollout {
	t.Helper()
	r := rollout{pods: map[string]map[string]podInfo{}}
	testwait.For(t, 2*time.Minute, "every Deployment to roll out in "+ns, func() (bool, string) {
		var deps appsv1.DeploymentList
		k.get(t, &deps, "-n", ns, "deployments")
		var pods corev1.PodList
		k.get(t, &pods, "-n", ns, "pods")
		if len(deps.Items) != len(m.Deployments()) {
			return false, fmt.Sprintf("%d Deployments, the chart renders %d", len(deps.Items), len(m.Deployments()))
		}
		r.pods = map[string]map[string]podInfo{}
		for _, d := range deps.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			st := d.Status
			if d.Generation != st.ObservedGeneration || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
				return false, fmt.Sprintf("Deployment %s: generation %d observed %d, replicas %d updated %d available %d of %d",
					d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, want)
			}
			comp := d.Spec.Template.Labels[ComponentLabel]
			r.pods[comp] = map[string]podInfo{}
			for _, p := range pods.Items {
				if p.Labels[ComponentLabel] != comp || p.DeletionTimestamp != nil {
					continue
				}
				if p.Status.Phase != corev1.PodRunning || !podReady(p) || p.Spec.NodeName == "" {
					return false, fmt.Sprintf("pod %s: phase %s, node %q, not Ready", p.Name, p.Status.Phase, p.Spec.NodeName)
				}
				r.pods[comp][p.Name] = podInfo{image: p.Spec.Containers[0].Image, checksum: p.Annotations["checksum/secret"], uid: string(p.UID)}
			}
			if len(r.pods[comp]) != int(want) {
				return false, fmt.Sprintf("Deployment %s: %d pods, want %d", d.Name, len(r.pods[comp]), want)
			}
		}
		return true, ""
	})
	return r
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rolled fails unless every Deployment's pods were all replaced between before and after.
func rolled(t *testing.T, why string, before, after rollout) {
	t.Helper()
	for comp, pods := range after.pods {
		for name := range pods {
			if _, ok := before.pods[comp][name]; ok {
				t.Errorf("%s: pod %s of %s was not replaced", why, name, comp)
			}
		}
	}
}

// expectPods fails unless every pod of every Deployment runs an image with the
// tag and, when checksum is not empty, carries that checksum/secret (per component).
func expectPods(t *testing.T, why string, r rollout, tag string, checksums map[string]string) {
	t.Helper()
	for comp, pods := range r.pods {
		for name, p := range pods {
			if !strings.HasSuffix(p.image, ":"+tag) {
				t.Errorf("%s: pod %s of %s runs %s, want tag %s", why, name, comp, p.image, tag)
			}
			if want, ok := checksums[comp]; ok && p.checksum != want {
				t.Errorf("%s: pod %s of %s has checksum/secret %s, want %s", why, name, comp, p.checksum, want)
			}
		}
	}
}

// helmTest runs `helm test` and expects its pod to have succeeded.
func (k *kube) helmTest(t *testing.T, ns string) {
	t.Helper()
	out, err := k.h(3*time.Minute, "test", release, "-n", ns, "--timeout", "2m")
	if err != nil {
		t.Fatalf("helm test: %v", err)
	}
	if !strings.Contains(out, "Phase:          Succeeded") && !regexp.MustCompile(`Phase:\s+Succeeded`).MatchString(out) {
		t.Fatalf("helm test did not report a succeeded test pod:\n%s", out)
	}
}

// leftovers lists every object left in ns that is not in keep (kind/name) and not what
// Kubernetes itself puts into every namespace.
func (k *kube) leftovers(t *testing.T, ns string, keep []string) []string {
	t.Helper()
	types := strings.Fields(k.kc(t, "api-resources", "--verbs=list", "--namespaced", "-o", "name"))
	types = slices.DeleteFunc(types, func(s string) bool { return s == "events" || s == "events.events.k8s.io" })
	var list unstructured.UnstructuredList
	out := k.kc(t, "get", strings.Join(types, ","), "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range list.Items {
		id := o.GetKind() + "/" + o.GetName()
		switch {
		case id == "ServiceAccount/default", id == "ConfigMap/kube-root-ca.crt", slices.Contains(keep, id):
			continue
		}
		left = append(left, id)
	}
	sort.Strings(left)
	return left
}

// uninstall runs `helm uninstall --wait` and expects nothing of the release to stay but
// the objects in keep (the StatefulSets' PersistentVolumeClaims, as documented), which
// must stay.
func (k *kube) uninstall(t *testing.T, ns string, keep []string) {
	t.Helper()
	if out, err := k.h(3*time.Minute, "uninstall", release, "-n", ns, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	testwait.For(t, 2*time.Minute, "helm uninstall to leave only "+strings.Join(keep, ", ")+" in "+ns, func() (bool, string) {
		left := k.leftovers(t, ns, keep)
		return len(left) == 0, "left behind: " + strings.Join(left, ", ")
	})
	for _, id := range keep {
		kind, name, _ := strings.Cut(id, "/")
		if _, err := k.run(context.Background(), nil, k.kubectl, "-n", ns, "get", strings.ToLower(kind), name); err != nil {
			t.Errorf("%s should stay after helm uninstall (docs/kubernetes.md says so): %v", id, err)
		}
	}
}

// TestClusterProductionLifecycle installs the production values (existing Secrets made
// first, ServiceMonitors, HPAs, a LoadBalancer gateway), waits, runs `helm test`, checks
// that each HPA scales its Deployment to its minimum, upgrades to a new image tag (the HPA
// keeps the replica count), rolls back and uninstalls: nothing of the release stays.
func TestClusterProductionLifecycle(t *testing.T) {
	t.Parallel()
	k := cluster(t)
	ns := k.namespace(t, "prod")
	m, err := Helm{Bin: k.helm, Root: k.root}.Template(release, ns, []string{prodValues})
	if err != nil {
		t.Fatal(err)
	}
	// The Secrets the production values name (docs/kubernetes.md lists their keys).
	var keep []string
	for _, name := range prodSecrets {
		args := []string{"-n", ns, "create", "secret", "generic", name,
			"--from-literal=DATABASE_URL=postgres://u:p@db.example.com:5432/" + name + "?sslmode=verify-full",
			"--from-literal=CURSOR_SECRET=prod-cursor-secret-0123456789",
			"--from-literal=INTERNAL_AUTH_SECRET=prod-internal-auth-secret-0123456789abcdef"}
		if name == release+"-gateway" {
			args = append(args, "--from-literal=KEY_HASH_PEPPER=prod-pepper-0123456789abcdef0123456789abcdef",
				"--from-literal=ADMIN_TOKEN=prod-admin-token-0123456789")
		} else {
			args = append(args, "--from-literal=KAFKA_PASSWORD=kafka-password")
		}
		if name == release+"-webhooks" {
			args = append(args, "--from-literal=WEBHOOK_SECRETS_KEYS=k1:cHJvZC13ZWJob29rLXNlY3JldHMta2V5LTAxMjM0NTY=")
		}
		k.kc(t, args...)
		keep = append(keep, "Secret/"+name)
	}
	if out, err := k.h(4*time.Minute, "install", release, ChartDir, "-n", ns, "-f", prodValues, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm install (production values): %v\n%s", err, out)
	}
	var svc corev1.Service
	k.get(t, &svc, "-n", ns, "service", release+"-gateway")
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Errorf("the gateway Service: type %s, load balancer %v", svc.Spec.Type, svc.Status.LoadBalancer.Ingress)
	}
	var sms unstructured.UnstructuredList
	k.get(t, &sms, "-n", ns, "servicemonitors.monitoring.coreos.com")
	if len(sms.Items) != len(m.ServiceMonitors()) {
		t.Errorf("%d ServiceMonitors in the cluster, the chart renders %d", len(sms.Items), len(m.ServiceMonitors()))
	}
	// Each HPA finds its Deployment and raises it to minReplicas (no metrics are needed for
	// that): a scaleTargetRef that names nothing would leave it at one replica.
	hpaMin := func() map[string]int32 {
		var hpas autoscalingv2.HorizontalPodAutoscalerList
		k.get(t, &hpas, "-n", ns, "hpa")
		out := map[string]int32{}
		for _, h := range hpas.Items {
			out[h.Spec.ScaleTargetRef.Name] = *h.Spec.MinReplicas
		}
		return out
	}
	mins := hpaMin()
	if len(mins) != len(m.HPAs()) || len(mins) == 0 {
		t.Fatalf("%d HPAs in the cluster, the chart renders %d", len(mins), len(m.HPAs()))
	}
	scaled := func(why string) {
		t.Helper()
		testwait.For(t, 2*time.Minute, "every HPA to scale its Deployment to minReplicas ("+why+")", func() (bool, string) {
			for dep, want := range mins {
				var d appsv1.Deployment
				k.get(t, &d, "-n", ns, "deployment", dep)
				if d.Spec.Replicas == nil || *d.Spec.Replicas < want || d.Status.AvailableReplicas < want {
					return false, fmt.Sprintf("Deployment %s: %d available of %v, HPA minReplicas %d", dep, d.Status.AvailableReplicas, d.Spec.Replicas, want)
				}
			}
			return true, ""
		})
	}
	scaled("after install")
	first := k.readRollout(t, ns, m)
	expectPods(t, "revision 1", first, "0.1.0", nil)
	t.Logf("revision 1 installed in %s; every HPA raised its Deployment to minReplicas", ns)
	k.helmTest(t, ns)

	if out, err := k.h(4*time.Minute, "upgrade", release, ChartDir, "-n", ns, "-f", prodValues, "--set", "image.tag=0.1.1", "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm upgrade (production values, image.tag=0.1.1): %v\n%s", err, out)
	}
	// The chart leaves replicas out when an HPA owns them: an upgrade keeps the HPA's count.
	for dep, want := range mins {
		var d appsv1.Deployment
		k.get(t, &d, "-n", ns, "deployment", dep)
		if d.Spec.Replicas == nil || *d.Spec.Replicas < want {
			t.Errorf("helm upgrade reset Deployment %s to %v replicas under its HPA (minReplicas %d)", dep, d.Spec.Replicas, want)
		}
	}
	second := k.readRollout(t, ns, m)
	rolled(t, "a new image tag", first, second)
	expectPods(t, "revision 2 (image.tag=0.1.1)", second, "0.1.1", nil)

	if out, err := k.h(4*time.Minute, "rollback", release, "1", "-n", ns, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm rollback: %v\n%s", err, out)
	}
	scaled("after the rollback")
	third := k.readRollout(t, ns, m)
	expectPods(t, "revision 3 (rollback to 1)", third, "0.1.0", nil)

	t.Logf("revisions 2 (image.tag=0.1.1) and 3 (rollback to 1) rolled out")
	// The Secrets were made by hand, not by the chart: they stay; nothing else does.
	k.uninstall(t, ns, keep)
}

// brokenChart copies the chart into a temporary directory and replaces old with new in
// one of its files (which must contain old).
func brokenChart(t *testing.T, root, file, old, new string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "customer-api")
	src := filepath.Join(root, ChartDir)
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == file {
			if !strings.Contains(string(b), old) {
				return fmt.Errorf("%s no longer contains %q: update the break-it test", file, old)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestClusterBreakIt breaks the chart in ways that helm's own checks (lint, template
// --validate, install --dry-run=server) let through and shows that the API server refuses
// them, for the right reason: the error names the field and the rule.
func TestClusterBreakIt(t *testing.T) {
	k := cluster(t)
	ns := k.namespace(t, "breakit")
	cases := []struct {
		name, file, old, new string
		// clientMisses: chartcheck's own decoding and rules (make test) let it through too.
		clientMisses bool
		want         []string
	}{
		{
			name: "unknown field (a misspelt readinessProbe)", file: "templates/workloads.yaml",
			old: "readinessProbe:", new: "readinesProbe:",
			want: []string{"readinesProbe: field not declared in schema"},
		},
		{
			name: "string where an integer belongs (terminationGracePeriodSeconds quoted)", file: "templates/workloads.yaml",
			old:  "terminationGracePeriodSeconds: {{ $s.terminationGracePeriodSeconds }}",
			new:  "terminationGracePeriodSeconds: {{ $s.terminationGracePeriodSeconds | quote }}",
			want: []string{"spec.template.spec.terminationGracePeriodSeconds: expected numeric (int or float), got string"},
		},
		{
			name: "string where an integer or a percentage belongs (PDB maxUnavailable quoted)", file: "templates/workloads.yaml",
			old: "maxUnavailable: {{ $s.pdb.maxUnavailable }}", new: "maxUnavailable: {{ $s.pdb.maxUnavailable | quote }}",
			clientMisses: true,
			want:         []string{`spec.maxUnavailable: Invalid value: "1": a valid percent string must be`},
		},
		{
			// chartcheck's rules catch this one too; here it shows that the namespaces of
			// these tests enforce the restricted Pod Security level (the hook pod is refused,
			// the Deployments' pod templates warned about), so the dry runs' silence means
			// every pod is admitted.
			name: "pod security (privilege escalation allowed)", file: "templates/_helpers.tpl",
			old: "allowPrivilegeEscalation: false", new: "allowPrivilegeEscalation: true",
			want: []string{`violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chart := brokenChart(t, k.root, c.file, c.old, c.new)
			// What helm checks by itself: lint, and template with --validate against the
			// cluster. Both let these through (logged: a helm that learns to catch one is
			// welcome, the API server is what this test is about).
			lint, lerr := k.h(time.Minute, "lint", "--strict", chart, "-f", devValues)
			t.Logf("helm lint --strict: err=%v %s", lerr, lastLine(lint))
			_, derr := k.h(time.Minute, "install", release, chart, "-n", ns, "-f", devValues, "--dry-run=server")
			t.Logf("helm install --dry-run=server: err=%v", derr)
			out, err := k.template(ns, chart, []string{devValues})
			t.Logf("helm template --validate: err=%v", err)
			if err != nil {
				plain, err := k.h(time.Minute, "template", release, chart, "-n", ns, "-f", devValues)
				if err != nil {
					t.Fatalf("helm template: %v", err)
				}
				out = []byte(plain)
			}
			if _, derr := Decode([]byte(out)); c.clientMisses {
				if derr != nil {
					t.Logf("chartcheck's decoding now catches it too: %v", derr)
				} else if m, _ := Decode([]byte(out)); len(Check(m, Rules{})) == 0 {
					t.Logf("chartcheck's decoding and rules (make test) let it through")
				}
			}
			stderr, err := k.dryRunApply(ns, []byte(out))
			if err == nil {
				t.Fatalf("the API server accepted the broken chart (strict server-side dry run); stderr: %s", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the API server refused the broken chart, but not for the right reason: want %q in\n%v", w, err)
				}
			}
			if ce := (*cmdError)(nil); errors.As(err, &ce) {
				t.Logf("refused: %s", firstLine(ce.stderr, c.want[0]))
			}
		})
	}

	// A changed selector: the chart is consistent in itself (the Deployment selects its own
	// pods, the Services and policies too), so no check of one rendering sees anything; but
	// a Deployment's selector is immutable and every upgrade from the old chart fails.
	t.Run("selector changed on upgrade (immutable)", func(t *testing.T) {
		ns := k.namespace(t, "breakit-selector")
		if out, err := k.h(4*time.Minute, "install", release, ChartDir, "-n", ns, "-f", devValues); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		chart := brokenChart(t, k.root, "templates/_helpers.tpl",
			"app.kubernetes.io/component: {{ .component }}",
			"app.kubernetes.io/component: {{ .component }}\ncustomerapi.io/tier: api")
		out, err := k.h(time.Minute, "template", release, chart, "-n", ns, "-f", devValues)
		if err != nil {
			t.Fatalf("helm template of the changed chart: %v", err)
		}
		m, err := Decode([]byte(out))
		if err != nil {
			t.Fatalf("chartcheck decoding of the changed chart: %v", err)
		}
		if errs := Check(m, Rules{}); len(errs) > 0 {
			t.Logf("chartcheck's rules object to the changed chart: %v", errs)
		} else {
			t.Logf("chartcheck's decoding and rules (make test) let the changed selector through")
		}
		out, err = k.h(4*time.Minute, "upgrade", release, chart, "-n", ns, "-f", devValues)
		if err == nil {
			t.Fatalf("helm upgrade with a changed Deployment selector succeeded:\n%s", out)
		}
		for _, w := range []string{"spec.selector", "field is immutable"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("helm upgrade failed, but not for the right reason: want %q in\n%v", w, err)
			}
		}
		t.Logf("refused: %s", strings.SplitN(firstLine(err.Error(), "field is immutable"), " && ", 2)[0])
		_, _ = k.h(3*time.Minute, "uninstall", release, "-n", ns)
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// firstLine returns the first line of s that contains sub (or the first line).
func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return strings.SplitN(s, "\n", 2)[0]
}

// TestClusterSkaffoldRender renders skaffold.yaml with skaffold itself, as after a build of
// every artifact (the images given as built, with digests), and applies the result with a
// strict server-side dry run into skaffold's namespace: every Deployment must run the
// image skaffold built for it, pinned by digest.
func TestClusterSkaffoldRender(t *testing.T) {
	k := cluster(t)
	bin := os.Getenv("SKAFFOLD")
	if bin == "" {
		t.Fatal("SKAFFOLD must be set: run `make test-cluster`")
	}
	s, err := LoadSkaffold(k.root)
	if err != nil {
		t.Fatal(err)
	}
	type build struct {
		ImageName string `json:"imageName"`
		Tag       string `json:"tag"`
	}
	var builds struct {
		Builds []build `json:"builds"`
	}
	want := map[string]string{}
	for i, a := range s.Build.Artifacts {
		ref := fmt.Sprintf("%s:cluster-test@sha256:%064x", a.Image, i+1)
		builds.Builds = append(builds.Builds, build{ImageName: a.Image, Tag: ref})
		want[a.Image] = ref
	}
	artifacts := filepath.Join(t.TempDir(), "artifacts.json")
	b, _ := json.Marshal(builds)
	if err := os.WriteFile(artifacts, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The dry run goes into a namespace of the test's own (restricted Pod Security), not
	// skaffold.yaml's (customer-api): that one may hold someone's release, whose objects a
	// server-side apply, even a dry run, would conflict with. The rendered objects name no
	// namespace (checked below), so they go where they are applied.
	ns := k.namespace(t, "skaffold")
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "render", "--build-artifacts", artifacts, "--offline=false",
		"--update-check=false", "--interactive=false", "--digest-source=local")
	cmd.Dir = k.root
	cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+filepath.Dir(k.helm)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"SKAFFOLD_UPDATE_CHECK=false", "HELM_CACHE_HOME="+home+"/helm", "HELM_CONFIG_HOME="+home+"/helm", "HELM_DATA_HOME="+home+"/helm")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skaffold render: %v\n%s", err, stderr.String())
	}
	m, err := Decode(stdout.Bytes())
	if err != nil {
		t.Fatalf("skaffold render's output: %v", err)
	}
	if len(m.Deployments()) != len(s.Build.Artifacts) {
		t.Errorf("skaffold render: %d Deployments for %d artifacts", len(m.Deployments()), len(s.Build.Artifacts))
	}
	for _, d := range m.Deployments() {
		img := d.Spec.Template.Spec.Containers[0].Image
		comp := d.Spec.Template.Labels[ComponentLabel]
		var built string
		for image, ref := range want {
			if strings.HasSuffix(image, "/"+comp) {
				built = ref
			}
		}
		if img != built {
			t.Errorf("skaffold render: Deployment %s runs %s, want the image skaffold built for %s: %q", d.Name, img, comp, built)
		}
		if d.Namespace != "" {
			t.Errorf("skaffold render: Deployment %s names namespace %q; the release's namespace comes from where it is applied", d.Name, d.Namespace)
		}
	}
	errOut, err := k.dryRunApply(ns, stdout.Bytes())
	if err != nil {
		t.Fatalf("the API server refuses what skaffold renders (strict server-side dry run): %v", err)
	}
	if w := warnings(errOut); len(w) > 0 {
		t.Errorf("the API server warns about what skaffold renders:\n%s", strings.Join(w, "\n"))
	}
}
