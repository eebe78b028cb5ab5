package sessions_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/pages/internal/pagestest"
	"github.com/customerapi/platform/services/pages/internal/sessions"
	"github.com/customerapi/platform/services/pages/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

// sets are the pages core schema and the sessions schema, in service order.
var sets = []postgres.MigrationSet{migrations.Set, sessions.Migrations}

// start runs a service with only the session routes and worker; env adds settings.
func start(t testing.TB, env map[string]string, opts ...servicetest.Options) *servicetest.Service {
	t.Helper()
	var o servicetest.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	all := map[string]string{"SESSION_COMPUTE_INTERVAL": "100ms"}
	for k, v := range env {
		all[k] = v
	}
	o.Env = all
	return servicetest.Start(t, "pages", sets, func(rt *service.Runtime, env *config.Env) error {
		computeSessions, err := sessions.Register(rt, env)
		if err != nil {
			return err
		}
		rt.Go(computeSessions)
		return nil
	}, o)
}

func client(t apitest.TB, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

// seedPage inserts a page and n audiences of it straight into the pages tables.
var seedPage = pagestest.SeedPage

func deletePage(t testing.TB, pool *pgxpool.Pool, tenantID, pageID string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE pages SET deleted_at = now() WHERE tenant_id = $1 AND id = $2`,
		tenantID, pageID); err != nil {
		t.Fatal(err)
	}
}

// eventually fails the test unless cond holds within timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// payloadSchema returns a schema of the OpenAPI document's components.
func payloadSchema(t testing.TB, name string) *openapi3.Schema {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("the OpenAPI document has no schema %s", name)
	}
	return ref.Value
}

// checkSchema validates a JSON document against a schema of the OpenAPI document.
func checkSchema(t testing.TB, name string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := payloadSchema(t, name).VisitJSON(v); err != nil {
		t.Fatalf("%s does not match %s: %v", raw, name, err)
	}
}
