package kind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
)

// cluster is the release under test and the tools that reach it.
type cluster struct {
	kubectlBin, helmBin     string
	namespace, release      string
	chart, rollTag          string
	base, admin, adminToken string
	contract                *apitest.Contract
}

// env returns the cluster of the environment, skipping the test when there is none.
func env(t *testing.T) *cluster {
	t.Helper()
	ns := os.Getenv("KIND_NAMESPACE")
	if ns == "" {
		t.Skip("needs the platform on a cluster: KIND_NAMESPACE (make test-kind)")
	}
	c := &cluster{kubectlBin: or(os.Getenv("KUBECTL"), "kubectl"), helmBin: or(os.Getenv("HELM"), "helm"),
		namespace: ns, release: or(os.Getenv("KIND_RELEASE"), "customer-api"), chart: os.Getenv("KIND_CHART"),
		rollTag: os.Getenv("KIND_ROLL_TAG"), base: os.Getenv("E2E_BASE_URL"), admin: os.Getenv("E2E_ADMIN_URL"),
		adminToken: os.Getenv("E2E_ADMIN_TOKEN")}
	if c.base == "" || c.admin == "" || c.adminToken == "" {
		t.Fatal("E2E_BASE_URL, E2E_ADMIN_URL and E2E_ADMIN_TOKEN are required with KIND_NAMESPACE")
	}
	var err error
	if c.contract, err = apitest.Load(); err != nil {
		t.Fatal(err)
	}
	return c
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// run runs a command within d, returning its standard output; the error carries its
// standard error.
func run(d time.Duration, name string, args ...string) (string, error) {
	return runInput(d, nil, name, args...)
}

// runInput is run with input on the command's standard input.
func runInput(d time.Duration, input []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// kubectl runs kubectl in the release's namespace.
func (c *cluster) kubectl(d time.Duration, args ...string) (string, error) {
	return run(d, c.kubectlBin, append([]string{"--namespace", c.namespace}, args...)...)
}

// helm runs helm on the release's namespace.
func (c *cluster) helm(d time.Duration, args ...string) (string, error) {
	return run(d, c.helmBin, append(args, "--namespace", c.namespace)...)
}

// api returns a client of the gateway for a fresh tenant whose rate limit the load of a
// fault test does not reach.
func (c *cluster) api(t *testing.T) *apitest.Client {
	t.Helper()
	admin := (&apitest.Client{T: t, Base: c.admin}).With("Authorization", "Bearer "+c.adminToken)
	r := admin.Do("POST", "/admin/v0/keys", map[string]any{"tenantIds": []string{fmt.Sprintf("kind%d", time.Now().UnixNano())},
		"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}})
	if r.Status != 201 {
		t.Fatalf("create key: %s", r)
	}
	return (&apitest.Client{T: t, Base: c.base, Contract: c.contract, HTTP: &http.Client{Timeout: 30 * time.Second}}).
		With("x-api-key", r.Map()["key"].(string))
}

// pod is what the tests read of a pod.
type pod struct {
	Name, UID, Node, IP, Image, Hash string
	Ready, Deleting                  bool
}

// pods lists the pods of the release matching a label selector (beside the release's
// own), sorted by name.
func (c *cluster) pods(selector string) ([]pod, error) {
	sel := "app.kubernetes.io/instance=" + c.release
	if selector != "" {
		sel += "," + selector
	}
	out, err := c.kubectl(30*time.Second, "get", "pods", "-l", sel, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				UID               string            `json:"uid"`
				DeletionTimestamp *string           `json:"deletionTimestamp"`
				Labels            map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName   string `json:"nodeName"`
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
			Status struct {
				PodIP      string `json:"podIP"`
				Conditions []struct {
					Type, Status string
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("pods %s: %w", sel, err)
	}
	var ps []pod
	for _, it := range list.Items {
		p := pod{Name: it.Metadata.Name, UID: it.Metadata.UID, Node: it.Spec.NodeName, IP: it.Status.PodIP,
			Deleting: it.Metadata.DeletionTimestamp != nil, Hash: it.Metadata.Labels["pod-template-hash"]}
		if len(it.Spec.Containers) > 0 {
			p.Image = it.Spec.Containers[0].Image
		}
		for _, cond := range it.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == "True" {
				p.Ready = true
			}
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps, nil
}

// component selects the pods of one of the release's components (gateway, topics, ...,
// postgresql, kafka).
func component(name string) string { return "app.kubernetes.io/component=" + name }

// waitReplaced waits until the pods matching selector are all new (none of old's, by
// UID: a StatefulSet's new pod keeps the old one's name), Ready and none being deleted,
// and at least want of them; it returns them.
func (c *cluster) waitReplaced(t *testing.T, selector string, old []pod, want int, within time.Duration) []pod {
	t.Helper()
	gone := map[string]bool{}
	for _, p := range old {
		gone[p.UID] = true
	}
	deadline := time.Now().Add(within)
	state := ""
	for time.Now().Before(deadline) {
		ps, err := c.pods(selector)
		if err != nil {
			state = err.Error()
		} else {
			ok := len(ps) >= want
			var b strings.Builder
			for _, p := range ps {
				fmt.Fprintf(&b, "%s ready=%v deleting=%v new=%v; ", p.Name, p.Ready, p.Deleting, !gone[p.UID])
				if gone[p.UID] || !p.Ready || p.Deleting {
					ok = false
				}
			}
			if ok {
				return ps
			}
			state = b.String()
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("the pods of %s were not all replaced and Ready within %s: %s", selector, within, state)
	return nil
}

// names lists the pods' names.
func names(ps []pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// secs formats a duration in seconds with one decimal.
func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
