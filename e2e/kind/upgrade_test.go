package kind

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"
)

// `helm upgrade` that changes every Deployment's pod template rolls real pods: each
// Deployment gets a new ReplicaSet whose pods (new names) are all Ready; `helm rollback`
// rolls them again, back to the previous ReplicaSets' templates, all Ready; `helm test`
// passes after both.
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

	began := time.Now()
	if _, err := k.helm(8*time.Minute, "upgrade", k.release, k.chart, "--reuse-values",
		"--set-string", fmt.Sprintf("defaults.podAnnotations.kind-upgrade=%d", began.UnixNano()),
		"--wait", "--timeout", "6m"); err != nil {
		t.Fatal(err)
	}
	upgraded := k.rollout(t, deps, before, 3*time.Minute)
	upgradeTook := time.Since(began)
	for name, d := range upgraded {
		if d.hash == before[name].hash {
			t.Errorf("the upgrade left %s on its ReplicaSet (pod-template-hash %s)", name, d.hash)
		}
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
	k.helmTest(t)
	pods := 0
	for _, d := range rolledBack {
		pods += len(d.pods)
	}
	line := fmt.Sprintf("UPGRADE %d Deployments (%d pods): helm upgrade rolled every pod in %s, helm rollback to revision %d in %s (revision now %d); helm test passed after each",
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
