package application_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

// Test keys of WEBHOOK_SECRETS_KEYS: 32 bytes of "1" and of "2", base64.
const (
	testKeyK1 = "k1:MTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTE="
	testKeyK2 = "k2:MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjI="
)

// storedSecrets reads every subscription's secret columns as they are in the table.
func storedSecrets(t *testing.T, databaseURL string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT subscription_id, secret || ' ' || coalesce(previous_secret, '') FROM subscriptions`)
	out := map[string]string{}
	var id, cols string
	if _, err := pgx.ForEachRow(rows, []any{&id, &cols}, func() error { out[id] = cols; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The service seals the signing secrets it stores, shows them where the contract says,
// and, after WEBHOOK_SECRETS_KEYS is rotated to "k2,k1", seals every row (plaintext rows
// written before sealing included) again under k2 at start, still signing with the same
// secrets; then k1 can go.
func TestSecretsAreSealedAtRestAndFollowKeyRotation(t *testing.T) {
	rc := newReceiver(t, nil)
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	subID, secret := subscribe(t, c, rc.URL+"/hook", []string{"page.version.created"})
	stored := storedSecrets(t, s.DatabaseURL)
	if got := stored[subID]; strings.Contains(got, strings.TrimPrefix(secret, "whsec_")) || !strings.HasPrefix(got, "enc:v1:k1:") {
		t.Fatalf("the stored secret column is %q: it must hold the secret sealed under k1, never the secret", got)
	}
	s.Stop()
	conn, err := pgx.Connect(context.Background(), s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `INSERT INTO subscriptions (tenant_id, subscription_id, url, active, secret, created_at, updated_at)
		VALUES ('acme', 'whsub_plaintext', 'https://hooks.example.com/p', true, 'whsec_cGxhaW50ZXh0', now(), now())`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())

	s = start(t, map[string]string{"WEBHOOK_SECRETS_KEYS": testKeyK2 + "," + testKeyK1}, application.Options{},
		servicetest.Options{Broker: s.Broker, DatabaseURL: s.DatabaseURL})
	testwait.Eventually(t, 10*time.Second, "every row sealed under k2", func() bool {
		for _, cols := range storedSecrets(t, s.DatabaseURL) {
			if !strings.HasPrefix(cols, "enc:v1:k2:") || strings.Contains(cols, "whsec_") {
				return false
			}
		}
		return true
	})
	s.Stop()

	s = start(t, map[string]string{"WEBHOOK_SECRETS_KEYS": testKeyK2}, application.Options{},
		servicetest.Options{Broker: s.Broker, DatabaseURL: s.DatabaseURL})
	publish(t, s.Broker, event(t, "acme", events.TypePageVersionCreated, "audience_1"))
	testwait.Eventually(t, 20*time.Second, "the delivery", func() bool { return rc.count() == 1 })
	if got := rc.all()[0]; !verify256(secret, got.body, got.header.Get("X-Webhook-Signature-256")) {
		t.Fatal("after the key rotation the delivery is not signed with the subscription's secret")
	}
}

// A missing or malformed WEBHOOK_SECRETS_KEYS refuses to start, saying what is wanted and
// never echoing the value.
func TestSecretsKeysAreRequired(t *testing.T) {
	for value, want := range map[string]string{
		"":                          "WEBHOOK_SECRETS_KEYS: is required",
		"k1:c2hvcnQ=":               "WEBHOOK_SECRETS_KEYS: key k1: 5 bytes, want 32",
		"MTExMTExMTExMTExMTEx=":     "WEBHOOK_SECRETS_KEYS: entry 1: want <key ID>:<base64 key>",
		testKeyK1 + "," + testKeyK1: "WEBHOOK_SECRETS_KEYS: key k1: listed twice",
	} {
		env := config.FromMap(map[string]string{"WEBHOOK_SECRETS_KEYS": value})
		application.SettingsFromEnv(env)
		err := env.Err()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WEBHOOK_SECRETS_KEYS=%q: %v, want an error saying %q", value, err, want)
		}
		if value != "" && err != nil && strings.Contains(err.Error(), strings.TrimPrefix(value, "k1:")) {
			t.Errorf("the error %q echoes the key", err)
		}
	}
}
