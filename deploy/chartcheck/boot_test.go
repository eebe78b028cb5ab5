//go:build chartboot

package chartcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/pgcluster"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// TestDevValuesBootTheBinaries starts every deployable with exactly the environment the
// chart gives its pod with the development values (the Deployment's env and its Secret),
// changing only addresses (in-cluster names become a local PostgreSQL, a local broker and
// loopback ports), and expects the gateway's /readyz to answer 200 and its admin API to
// issue a key. It catches a setting the chart forgets, misspells or gets wrong. It builds
// every binary and starts a PostgreSQL cluster, so it sits behind the chartboot build tag
// (`make chart-boot`), outside `make test`; the e2e suite covers the binaries themselves.
func TestDevValuesBootTheBinaries(t *testing.T) {
	h := helm(t)
	r := root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := h.Template(release, namespace, []string{devValues})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Deployables(r)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	args := []string{"build", "-o", bin + string(os.PathSeparator)}
	for _, d := range ds {
		args = append(args, "./"+d.Package)
	}
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = r
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cluster, stopPG, err := pgtest.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPG()
	broker, err := kafkatest.StartOn(0)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Stop()

	secrets := map[string]map[string]string{}
	for _, s := range m.Secrets() {
		secrets[s.Name] = s.StringData
	}
	ports := map[string]int{}
	for _, d := range m.Deployments() {
		if ports[d.Spec.Template.Labels[ComponentLabel]], err = pgtest.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	adminPort, err := pgtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	var adminToken string
	for _, d := range m.Deployments() {
		name := d.Spec.Template.Labels[ComponentLabel]
		ctr := d.Spec.Template.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range ctr.Env {
			env[e.Name] = e.Value
		}
		for k, v := range secrets[ctr.EnvFrom[0].SecretRef.Name] {
			env[k] = v
		}
		u, err := url.Parse(env["DATABASE_URL"])
		if err != nil {
			t.Fatalf("%s: DATABASE_URL: %v", name, err)
		}
		db := strings.TrimPrefix(u.Path, "/")
		if err := pgcluster.CreateDatabase(ctx, cluster.URL("postgres"), db); err != nil {
			t.Fatal(err)
		}
		env["DATABASE_URL"] = cluster.URL(db)
		env["HTTP_ADDR"] = fmt.Sprintf("127.0.0.1:%d", ports[name])
		if env["METRICS_ADDR"] != "" {
			metricsPort, err := pgtest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			env["METRICS_ADDR"] = fmt.Sprintf("127.0.0.1:%d", metricsPort)
		}
		if name == "gateway" {
			env["ADMIN_ADDR"] = fmt.Sprintf("127.0.0.1:%d", adminPort)
			adminToken = env["ADMIN_TOKEN"]
			for k := range env {
				if svc, ok := strings.CutPrefix(k, "UPSTREAM_"); ok {
					env[k] = fmt.Sprintf("http://127.0.0.1:%d", ports[strings.ToLower(strings.TrimSuffix(svc, "_URL"))])
				}
			}
		} else {
			env["KAFKA_BROKERS"] = broker.Addr
		}
		if env["ASSETS_STORAGE_DIR"] != "" {
			env["ASSETS_STORAGE_DIR"] = t.TempDir()
		}
		cmd := exec.Command(filepath.Join(bin, name))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		logf, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			_ = logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("%s log:\n%s", name, b)
			}
		}()
	}

	gateway := fmt.Sprintf("http://127.0.0.1:%d", ports["gateway"])
	var last string
	for ready := false; !ready; {
		resp, err := http.Get(gateway + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ready, last = resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if !ready {
			select {
			case <-ctx.Done():
				t.Fatalf("gateway /readyz never answered 200: %s", last)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/admin/v0/keys", adminPort),
		strings.NewReader(`{"tenantIds":["chartcheck"]}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("admin API with the chart's ADMIN_TOKEN: %d %s", resp.StatusCode, b)
	}
	// A request through the gateway reaches a service, which accepts the gateway's
	// signature: both read the chart's INTERNAL_AUTH_SECRET alike.
	var issued struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(b, &issued); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, gateway+"/v0/topics", nil)
	req.Header.Set("x-api-key", issued.Key)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v0/topics through the gateway: %d %s (do the gateway and the services share INTERNAL_AUTH_SECRET?)", resp.StatusCode, b)
	}
}
