package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/customerapi/platform/api/apitest"
)

func rawBody(s string) apitest.Raw { return apitest.Raw(s) }

func must2(t *testing.T, r *apitest.Response, status int) *apitest.Response {
	t.Helper()
	must(t, r, status)
	return r
}

// tryDo sends a request without failing the test on transport errors (used while a
// service is being killed).
func tryDo(c *apitest.Client, method, path string, body any) (*apitest.Response, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, c.Base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header = c.Header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: rb}, nil
}
