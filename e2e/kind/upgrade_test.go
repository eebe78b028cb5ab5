package kind

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// `helm upgrade` that rotates a chart-made Secret (secrets.cursorSecret) rolls real pods
// through the checksum/secret annotation, though no image changed: each Deployment gets a
// new ReplicaSet whose pods (new names) are all Ready and the Secret holds the new value;
// `helm rollback` rolls them again, back to the previous ReplicaSets' templates and the old
// Secret; `helm test` passes after both, and the StatefulSets' pods (PostgreSQL, the
// broker), which neither changed, are the same pods throughout.
func TestHelmUpgradeAndRollbackRollRealPods(t *testing.T) {
	k := env(t)
	if k.chart == "" {
		t.Fatal("KIND_CHART is required")
	}
	deps, err := k.deployments()
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) < 2 {
		t.Fatalf("only %d Deployments in the release: %v", len(deps), deps)
	}
	revBefore, err := k.revision()
	if err != nil {
		t.Fatal(err)
	}
	before := k.rollout(t, deps, nil, time.Minute)
	stateful := k.podUIDs(t, "app.kubernetes.io/component in (postgresql,kafka)")
	secretBefore := k.secretValue(t, k.release+"-topics", "CURSOR_SECRET")

	began := time.Now()
	rotated := fmt.Sprintf("kind-rotated-cursor-secret-%d", began.UnixNano())
	if _, err := k.helm(8*time.Minute, "upgrade", k.release, k.chart, "--reuse-values",
		"--set-string", "secrets.cursorSecret="+rotated, "--wait", "--timeout", "6m"); err != nil {
		t.Fatal(err)
	}
	upgraded := k.rollout(t, deps, before, 3*time.Minute)
	upgradeTook := time.Since(began)
	for name, d := range upgraded {
		if d.hash == before[name].hash {
			t.Errorf("a rotated Secret left %s on its ReplicaSet (pod-template-hash %s): checksum/secret did not roll it", name, d.hash)
		}
	}
	if got := k.secretValue(t, k.release+"-topics", "CURSOR_SECRET"); got != rotated {
		t.Errorf("Secret %s-topics holds CURSOR_SECRET %q after the upgrade, want %q", k.release, got, rotated)
	}
	k.helmTest(t)

	began = time.Now()
	if _, err := k.helm(8*time.Minute, "rollback", k.release, fmt.Sprint(revBefore), "--wait", "--timeout", "6m"); err != nil {
		t.Fatal(err)
	}
	rolledBack := k.rollout(t, deps, upgraded, 3*time.Minute)
	rollbackTook := time.Since(began)
	for name, d := range rolledBack {
		if d.hash != before[name].hash {
			t.Errorf("after the rollback %s runs pod-template-hash %s, not %s as before the upgrade", name, d.hash, before[name].hash)
		}
	}
	rev, err := k.revision()
	if err != nil {
		t.Fatal(err)
	}
	if rev != revBefore+2 {
		t.Errorf("revision %d after an upgrade and a rollback of revision %d", rev, revBefore)
	}
	if got := k.secretValue(t, k.release+"-topics", "CURSOR_SECRET"); got != secretBefore {
		t.Errorf("Secret %s-topics holds CURSOR_SECRET %q after the rollback, want the old %q", k.release, got, secretBefore)
	}
	if after := k.podUIDs(t, "app.kubernetes.io/component in (postgresql,kafka)"); after != stateful {
		t.Errorf("the StatefulSets' pods were replaced by an upgrade and a rollback that did not change them: %s, then %s", stateful, after)
	}
	k.helmTest(t)
	pods := 0
	for _, d := range rolledBack {
		pods += len(d.pods)
	}
	line := fmt.Sprintf("UPGRADE %d Deployments (%d pods): helm upgrade rotating a Secret rolled every pod in %s, helm rollback to revision %d in %s (revision now %d); helm test passed after each",
		len(deps), pods, secs(upgradeTook), revBefore, secs(rollbackTook), rev)
	t.Log(line)
	fmt.Println(line)
}

// deployment is one Deployment's rollout as the test sees it.
type deployment struct {
	hash string // the pod-template-hash of its pods
	pods []pod
}

// deployments returns the components of the release's Deployments with their replicas.
func (c *cluster) deployments() (map[string]int, error) {
	out, err := c.kubectl(30*time.Second, "get", "deployment", "-l", "app.kubernetes.io/instance="+c.release, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Replicas int `json:"replicas"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("deployments: %w", err)
	}
	deps := map[string]int{}
	for _, d := range list.Items {
		deps[d.Metadata.Labels["app.kubernetes.io/component"]] = d.Spec.Replicas
	}
	return deps, nil
}

// rollout waits until every Deployment's pods (those a ReplicaSet made) are Ready, none
// being deleted, none among prev's pods (when given), and then requires them to number
// its replicas and share one pod-template-hash; it returns each Deployment's hash and pods.
func (c *cluster) rollout(t *testing.T, deps map[string]int, prev map[string]deployment, within time.Duration) map[string]deployment {
	t.Helper()
	out := map[string]deployment{}
	for name, replicas := range deps {
		sel := component(name) + ",pod-template-hash"
		ps := c.waitReplaced(t, sel, prev[name].pods, replicas, within)
		hashes := map[string]bool{}
		for _, p := range ps {
			hashes[p.Hash] = true
			if !p.Ready || p.Deleting {
				t.Fatalf("pod %s of %s is not Ready (or is being deleted)", p.Name, name)
			}
		}
		if len(ps) != replicas || len(hashes) != 1 {
			t.Fatalf("%s: %d pods of %d replicas, pod-template-hashes %v", name, len(ps), replicas, keys(hashes))
		}
		out[name] = deployment{hash: ps[0].Hash, pods: ps}
	}
	return out
}

// podUIDs lists the release's pods that selector (within the release) picks, as sorted
// name=uid pairs; there must be at least one.
func (c *cluster) podUIDs(t *testing.T, selector string) string {
	t.Helper()
	out, err := c.kubectl(30*time.Second, "get", "pods", "-l", "app.kubernetes.io/instance="+c.release+","+selector,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	pods := strings.Fields(out)
	if len(pods) == 0 {
		t.Fatalf("no pod of the release matches %s", selector)
	}
	sort.Strings(pods)
	return strings.Join(pods, ",")
}

// secretValue is one key of a Secret in the release's namespace.
func (c *cluster) secretValue(t *testing.T, name, key string) string {
	t.Helper()
	out, err := c.kubectl(30*time.Second, "get", "secret", name, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
	v, ok := s.Data[key]
	if !ok {
		t.Fatalf("secret %s has no %s", name, key)
	}
	return string(v)
}

// revision is the release's current revision.
func (c *cluster) revision() (int, error) {
	out, err := c.helm(30*time.Second, "status", c.release, "--output", "json")
	if err != nil {
		return 0, err
	}
	var st struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return 0, fmt.Errorf("helm status %s: %q: %w", c.release, out, err)
	}
	if st.Version == 0 {
		return 0, fmt.Errorf("helm status %s: no version in %q", c.release, out)
	}
	return st.Version, nil
}

// helmTest runs the chart's tests.
func (c *cluster) helmTest(t *testing.T) {
	t.Helper()
	if out, err := c.helm(5*time.Minute, "test", c.release, "--timeout", "4m"); err != nil {
		t.Fatalf("helm test: %v\n%s", err, out)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
