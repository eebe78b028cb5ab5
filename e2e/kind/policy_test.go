package kind

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The chart's NetworkPolicies, enforced by the cluster's CNI: a pod without the gateway's
// labels cannot reach a service's API port, while a pod with them can, and anyone can
// reach the gateway's public port. The allowed probes are retried until the CNI has
// synced the new pods; only then must the denied probe fail, every time, for 15 s.
func TestNetworkPolicyKeepsServicesBehindTheGateway(t *testing.T) {
	k := env(t)
	gwLabels, err := k.selector("deployment", k.release+"-gateway")
	if err != nil {
		// the gateway Deployment's name depends on fullnameOverride: find it by its label
		gwLabels, err = k.componentSelector("gateway")
		if err != nil {
			t.Fatal(err)
		}
	}
	topics, err := k.serviceAddr("topics")
	if err != nil {
		t.Fatal(err)
	}
	gateway, err := k.serviceAddr("gateway")
	if err != nil {
		t.Fatal(err)
	}
	image, pullPolicy, err := k.probeImage()
	if err != nil {
		t.Fatal(err)
	}
	nonce := time.Now().UnixNano() % 1000000
	outsider := fmt.Sprintf("kind-probe-outsider-%d", nonce)
	insider := fmt.Sprintf("kind-probe-gateway-labels-%d", nonce)
	// The insider carries the gateway's selector labels, so the Service of the gateway
	// would route to it: its readiness probe always fails, which keeps it out of the
	// endpoints (a NetworkPolicy does not care about readiness).
	k.startProbe(t, outsider, map[string]string{"app.kubernetes.io/name": "kind-probe"}, image, pullPolicy, false)
	k.startProbe(t, insider, gwLabels, image, pullPolicy, true)

	began := time.Now()
	var state string
	for _, allowed := range []struct{ from, to, why string }{
		{insider, topics, "a pod with the gateway's labels to the topics service's port"},
		{outsider, gateway, "any pod to the gateway's public port"},
	} {
		ok := false
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			var err error
			if ok, state, err = k.reach(allowed.from, allowed.to); err != nil {
				t.Fatal(err)
			} else if ok {
				break
			}
		}
		if !ok {
			t.Fatalf("allowed: %s (%s -> %s) did not connect within 90 s: %s", allowed.why, allowed.from, allowed.to, state)
		}
	}
	synced := time.Since(began)

	// Denied: a pod without the gateway's labels never reaches the topics service.
	attempts := 0
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); attempts++ {
		ok, state, err := k.reach(outsider, topics)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Fatalf("denied: a pod without the gateway's labels reached the topics service at %s (attempt %d, %s after the CNI synced): %s",
				topics, attempts+1, secs(time.Since(began)-synced), state)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if attempts < 3 {
		t.Fatalf("only %d denied probes in 15 s", attempts)
	}
	line := fmt.Sprintf("POLICY allowed probes connected after %s (gateway-labelled pod -> topics %s, any pod -> gateway %s); "+
		"%d denied probes (unlabelled pod -> topics) in 15 s all failed: %s", secs(synced), topics, gateway, attempts, state)
	t.Log(line)
	fmt.Println(line)
}

// selector returns the matchLabels of a workload's selector.
func (c *cluster) selector(kind, name string) (map[string]string, error) {
	out, err := c.kubectl(30*time.Second, "get", kind, name, "-o", "jsonpath={.spec.selector.matchLabels}")
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return nil, fmt.Errorf("selector of %s %s: %q: %w", kind, name, out, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("selector of %s %s: no matchLabels", kind, name)
	}
	return m, nil
}

// componentSelector returns the selector of the one Deployment of a component.
func (c *cluster) componentSelector(name string) (map[string]string, error) {
	out, err := c.kubectl(30*time.Second, "get", "deployment", "-l", "app.kubernetes.io/instance="+c.release+","+component(name),
		"-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(out); len(f) == 1 {
		return c.selector("deployment", f[0])
	}
	return nil, fmt.Errorf("deployments of %s: %q", name, out)
}

// serviceAddr returns the ClusterIP and port ("ip:port") of a component's Service port
// named http.
func (c *cluster) serviceAddr(name string) (string, error) {
	out, err := c.kubectl(30*time.Second, "get", "service", "-l", "app.kubernetes.io/instance="+c.release+","+component(name), "-o", "json")
	if err != nil {
		return "", err
	}
	var list struct {
		Items []struct {
			Spec struct {
				ClusterIP string `json:"clusterIP"`
				Ports     []struct {
					Name string `json:"name"`
					Port int    `json:"port"`
				} `json:"ports"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return "", fmt.Errorf("services of %s: %w", name, err)
	}
	for _, s := range list.Items {
		for _, p := range s.Spec.Ports {
			if p.Name == "http" && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != "None" {
				return fmt.Sprintf("%s:%d", s.Spec.ClusterIP, p.Port), nil
			}
		}
	}
	return "", fmt.Errorf("no Service of %s has a port named http", name)
}

// probeImage is the image of the chart's `helm test` pod (a shell with wget), with the
// release's pull policy.
func (c *cluster) probeImage() (image, pullPolicy string, err error) {
	out, err := c.helm(30*time.Second, "get", "values", c.release, "--all", "--output", "json")
	if err != nil {
		return "", "", err
	}
	var v struct {
		Image struct {
			PullPolicy string `json:"pullPolicy"`
		} `json:"image"`
		Tests struct {
			Image string `json:"image"`
		} `json:"tests"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return "", "", fmt.Errorf("the release's values: %w", err)
	}
	if v.Tests.Image == "" {
		return "", "", fmt.Errorf("the release has no tests.image")
	}
	return v.Tests.Image, or(v.Image.PullPolicy, "IfNotPresent"), nil
}

// startProbe creates a pod that idles, with the given labels, and waits until it runs;
// unready makes its readiness probe always fail. The pod goes at the test's end.
func (c *cluster) startProbe(t *testing.T, name string, labels map[string]string, image, pullPolicy string, unready bool) {
	t.Helper()
	container := map[string]any{
		"name": "probe", "image": image, "imagePullPolicy": pullPolicy,
		"command": []string{"sh", "-c", "sleep 900"},
		"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"},
			"limits": map[string]any{"cpu": "100m", "memory": "32Mi"}},
		"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"capabilities": map[string]any{"drop": []string{"ALL"}}},
	}
	if unready {
		container["readinessProbe"] = map[string]any{"exec": map[string]any{"command": []string{"sh", "-c", "exit 1"}},
			"periodSeconds": 5}
	}
	manifest, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"restartPolicy": "Never", "automountServiceAccountToken": false,
			"terminationGracePeriodSeconds": 0, "containers": []any{container},
			"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534,
				"seccompProfile": map[string]any{"type": "RuntimeDefault"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runInput(time.Minute, manifest, c.kubectlBin, "--namespace", c.namespace, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.kubectl(time.Minute, "delete", "pod", name, "--wait=true", "--grace-period=0", "--ignore-not-found"); err != nil {
			t.Errorf("remove probe pod: %v", err)
		}
	})
	if _, err := c.kubectl(2*time.Minute, "wait", "--for=jsonpath={.status.phase}=Running", "--timeout=90s", "pod/"+name); err != nil {
		t.Fatal(err)
	}
}

var probeExit = regexp.MustCompile(`probe-exit=(\d+)`)

// reach tells whether pod connects to addr over HTTP: any HTTP answer, or a connection
// that took the request, counts; a connection refused or one that does not open within
// 3 s does not; err is for a probe that could not tell (kubectl exec failed, or wget said
// something else, such as a bad address). Debian's busybox wget has no timeout option:
// busybox's timeout ends it (exit 143).
func (c *cluster) reach(pod, addr string) (bool, string, error) {
	out, err := c.kubectl(30*time.Second, "exec", pod, "--", "sh", "-c",
		`timeout 3 wget -q -O /dev/null "http://`+addr+`/healthz" 2>&1; echo "probe-exit=$?"`)
	out = strings.TrimSpace(out)
	m := probeExit.FindStringSubmatch(out)
	if err != nil {
		return false, out, fmt.Errorf("probe %s -> %s could not run: %w (%q)", pod, addr, err, out)
	}
	if m == nil {
		return false, out, fmt.Errorf("probe %s -> %s printed no exit status: %q", pod, addr, out)
	}
	switch {
	case m[1] == "0", strings.Contains(out, "server returned error"), strings.Contains(out, "error getting response"):
		return true, out, nil
	case m[1] == "143", m[1] == "124":
		return false, "no connection within 3 s (" + out + ")", nil
	case strings.Contains(out, "can't connect"):
		return false, out, nil
	}
	return false, out, fmt.Errorf("probe %s -> %s: unexpected answer %q", pod, addr, out)
}
