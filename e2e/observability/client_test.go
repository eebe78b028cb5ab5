package observability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call sends a JSON request and returns the status and the decoded object (nil if none).
func call(t *testing.T, base, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	resp, err := client.Do(jsonRequest(base, key, method, path, body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// jsonRequest is a request of method to base+path with body as JSON (none when nil),
// sent with the API key when key is not empty.
func jsonRequest(base, key, method, path string, body any) *http.Request {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	return req
}

func newKey(t *testing.T, rateLimit map[string]int) (id, key string) {
	t.Helper()
	body := map[string]any{"tenantIds": []string{fmt.Sprintf("obs%d", time.Now().UnixNano())}}
	if rateLimit != nil {
		body["rateLimit"] = rateLimit
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", sys.gateways[0].admin+"/admin/v0/keys", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+sys.stack.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if resp.StatusCode != 201 || json.NewDecoder(resp.Body).Decode(&m) != nil {
		t.Fatalf("create key: %d", resp.StatusCode)
	}
	return m["keyId"].(string), m["key"].(string)
}

// scrape reads one gateway's /metrics and returns the value of the series with exactly
// the given name and labels ({} for none), summing nothing: 0 when absent.
func scrape(t *testing.T, admin, series string) float64 {
	t.Helper()
	resp, err := client.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, series+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
			return v
		}
	}
	return 0
}

// promResult is one series of an instant query's answer.
type promResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates an instant PromQL query on the test's Prometheus.
func query(ctx context.Context, q string) ([]promResult, error) {
	u := sys.prom.url + "/api/v1/query?" + url.Values{"query": {q}}.Encode()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s", out.Error)
	}
	switch out.Data.ResultType {
	case "vector":
		var rs []promResult
		err := json.Unmarshal(out.Data.Result, &rs)
		return rs, err
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(out.Data.Result, &v); err != nil {
			return nil, err
		}
		return []promResult{{Value: v}}, nil
	}
	return nil, fmt.Errorf("result type %s", out.Data.ResultType)
}

// getJSON decodes a Prometheus API answer's data into v.
func getJSON(path string, v any) error {
	resp, err := client.Get(sys.prom.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return err
	}
	if out.Status != "success" {
		return fmt.Errorf("%s: %s", path, out.Status)
	}
	return json.Unmarshal(out.Data, v)
}
