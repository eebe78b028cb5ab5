package application_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/pages/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

// start runs the whole pages service with a fast worker; env adds settings.
func start(t testing.TB, opts servicetest.Options) *servicetest.Service {
	t.Helper()
	env := map[string]string{"PAGES_WORKER_POLL": "100ms", "SESSION_COMPUTE_INTERVAL": "100ms"}
	for k, v := range opts.Env {
		env[k] = v
	}
	opts.Env = env
	return servicetest.Start(t, application.Name, application.Migrations, application.Setup, opts)
}

func client(t apitest.TB, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

func createPage(t testing.TB, c *apitest.Client, body map[string]any) map[string]any {
	t.Helper()
	if body == nil {
		body = map[string]any{"name": "home", "title": "Welcome", "pageType": "inbound"}
	}
	return mustStatus(t, c.Do("POST", "/v0/pages", body), 201)
}

func createAudience(t testing.TB, c *apitest.Client, pageID string, body map[string]any) apitypes.Audience {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return apitest.Decode[apitypes.Audience](t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", body), 201, "an audience is created")
}

// getAudience reads an audience.
func getAudience(t testing.TB, c *apitest.Client, pageID, audienceID string) apitypes.Audience {
	t.Helper()
	return apitest.Decode[apitypes.Audience](t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, audienceID), nil), 200,
		"an audience reads")
}

// versionID is the ID of v, "" when v is null.
func versionID(v *apitypes.AudienceVersion) string {
	if v == nil {
		return ""
	}
	return v.VersionId
}

// waitAudience polls an audience until cond holds (10 s at most).
func waitAudience(t testing.TB, c *apitest.Client, pageID, audienceID string, cond func(a apitypes.Audience) bool) apitypes.Audience {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := getAudience(t, c, pageID, audienceID)
		if cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("audience never reached the expected state: %+v", a)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func status(want apitypes.AudienceStatus) func(apitypes.Audience) bool {
	return func(a apitypes.Audience) bool { return a.Status == want }
}

// seedPage inserts a draft page and n audiences of it straight into the pages tables
// (no versions, so no version events) and returns their IDs.
func seedPage(t testing.TB, pool *pgxpool.Pool, tenantID string, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	pageID := ids.New("page")
	now := time.Now().UTC()
	if _, err := pool.Exec(ctx, `INSERT INTO pages (tenant_id, id, name, title, page_type, status, created_at, updated_at)
		VALUES ($1, $2, 'p', 'P', 'inbound', 'draft', $3, $3)`, tenantID, pageID, now); err != nil {
		t.Fatal(err)
	}
	var audiences []string
	for i := 0; i < n; i++ {
		id := ids.New("audience")
		if _, err := pool.Exec(ctx, `INSERT INTO audiences (tenant_id, id, page_id, computed_name, status, publish_behavior,
			created_at, updated_at) VALUES ($1, $2, $3, $4, 'draft', 'draft', $5, $5)`,
			tenantID, id, pageID, fmt.Sprint("audience ", i), now); err != nil {
			t.Fatal(err)
		}
		audiences = append(audiences, id)
	}
	return pageID, audiences
}

// deletePage soft-deletes a page straight in the pages table.
func deletePage(t testing.TB, pool *pgxpool.Pool, tenantID, pageID string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE pages SET deleted_at = now() WHERE tenant_id = $1 AND id = $2`,
		tenantID, pageID); err != nil {
		t.Fatal(err)
	}
}
