package adapters_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

// keyring parses a ring of test keys named by their IDs ("k2", "k1"): key kN is 32 bytes of N.
func keyring(t *testing.T, ids ...string) *secretbox.Keyring {
	t.Helper()
	var spec []string
	for _, id := range ids {
		spec = append(spec, id+":"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat(id[1:], 32)[:32])))
	}
	k, err := secretbox.Parse(strings.Join(spec, ","))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	secretA = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
	secretB = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
)

func createWithSecret(t *testing.T, s *adapters.Store, tenantID, id, secret string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.CreateSubscription(context.Background(), domain.Subscription{ID: id, TenantID: tenantID,
		URL: "https://hooks.example.com/" + id, Active: true, Secret: secret, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

// stored reads a subscription's secret columns as they are in the table.
func stored(t *testing.T, pool *pgxpool.Pool, tenantID, id string) (secret string, previous *string) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT secret, previous_secret FROM subscriptions
		WHERE tenant_id = $1 AND subscription_id = $2`, tenantID, id).Scan(&secret, &previous); err != nil {
		t.Fatal(err)
	}
	return secret, previous
}

// A stored row holds neither the current nor the previous signing secret, nor their
// base64 part: a dump or a read replica does not let anyone sign deliveries.
func TestStoredSecretsAreSealed(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, migrations.Set)
	s := adapters.NewStore(pool, keyring(t, "k1"))
	createWithSecret(t, s, "acme", "whsub_1", secretA)
	if _, err := s.UpdateSubscription(ctx, "acme", "whsub_1", func(sub *domain.Subscription) bool {
		sub.Rotate(secretB, time.Now())
		return true
	}); err != nil {
		t.Fatal(err)
	}
	secret, previous := stored(t, pool, "acme", "whsub_1")
	for _, col := range []string{secret, *previous} {
		for _, plain := range []string{secretA, secretB, secretA[len("whsec_"):], secretB[len("whsec_"):]} {
			if strings.Contains(col, plain) {
				t.Fatalf("the stored column %q holds the signing secret %q: secrets must be sealed at rest", col, plain)
			}
		}
		if !strings.HasPrefix(col, "enc:v1:k1:") {
			t.Fatalf("the stored column %q is not sealed under k1", col)
		}
	}
	got, err := s.GetSubscription(ctx, "acme", "whsub_1")
	if err != nil || got.Secret != secretB || got.PreviousSecret == nil || *got.PreviousSecret != secretA {
		t.Fatalf("read back %+v, %v: want the secrets themselves", got, err)
	}
}

// After a rotation of the ring to "k2,k1", rows sealed under k1 (and rows in plaintext,
// written before sealing) still read, and ResealSecrets seals them again under k2, after
// which the ring without k1 reads them all.
func TestResealAfterKeyRotation(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, migrations.Set)
	old := adapters.NewStore(pool, keyring(t, "k1"))
	createWithSecret(t, old, "acme", "whsub_1", secretA)
	if _, err := old.UpdateSubscription(ctx, "acme", "whsub_1", func(sub *domain.Subscription) bool {
		sub.Rotate(secretB, time.Now())
		return true
	}); err != nil {
		t.Fatal(err)
	}
	// A row written in plaintext, as before sealing existed.
	if _, err := pool.Exec(ctx, `INSERT INTO subscriptions (tenant_id, subscription_id, url, active, secret, created_at, updated_at)
		VALUES ('globex', 'whsub_2', 'https://hooks.example.com/2', true, $1, now(), now())`, secretA); err != nil {
		t.Fatal(err)
	}
	rotated := adapters.NewStore(pool, keyring(t, "k2", "k1"))
	if got, err := rotated.GetSubscription(ctx, "acme", "whsub_1"); err != nil || got.Secret != secretB || *got.PreviousSecret != secretA {
		t.Fatalf("a k1 row under the ring k2,k1: %+v, %v", got, err)
	}
	if n, err := rotated.StaleSecrets(ctx); err != nil || n != 2 {
		t.Fatalf("stale before resealing = %d, %v; want 2 (the k1 row and the plaintext row)", n, err)
	}
	r, err := rotated.ResealSecrets(ctx, 1) // batches of one: the cursor must move on
	if err != nil || r.Sealed != 2 || r.Remaining != 0 || len(r.Unreadable) != 0 {
		t.Fatalf("reseal = %+v, %v; want 2 sealed, none remaining", r, err)
	}
	for _, row := range [][2]string{{"acme", "whsub_1"}, {"globex", "whsub_2"}} {
		secret, previous := stored(t, pool, row[0], row[1])
		if !strings.HasPrefix(secret, "enc:v1:k2:") || previous != nil && !strings.HasPrefix(*previous, "enc:v1:k2:") {
			t.Fatalf("%v after resealing: %q, %v; want both sealed under k2", row, secret, previous)
		}
	}
	onlyNew := adapters.NewStore(pool, keyring(t, "k2"))
	a, errA := onlyNew.GetSubscription(ctx, "acme", "whsub_1")
	b, errB := onlyNew.GetSubscription(ctx, "globex", "whsub_2")
	if errA != nil || errB != nil || a.Secret != secretB || *a.PreviousSecret != secretA || b.Secret != secretA {
		t.Fatalf("with k1 removed: %+v %v, %+v %v", a, errA, b, errB)
	}
	// A row sealed under a key the ring lacks is reported, never overwritten.
	if r, err := adapters.NewStore(pool, keyring(t, "k3")).ResealSecrets(ctx, 10); err != nil || len(r.Unreadable) != 2 || r.Sealed != 0 {
		t.Fatalf("reseal without the rows' key = %+v, %v; want 2 unreadable, none sealed", r, err)
	}
}

// A sealed secret copied into another subscription's row does not open there: neither
// reading the subscription nor claiming its delivery yields the other row's secret.
func TestSealedSecretMovedToAnotherRowDoesNotOpen(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, migrations.Set)
	s := adapters.NewStore(pool, keyring(t, "k1"))
	createWithSecret(t, s, "acme", "whsub_a", secretA)
	createWithSecret(t, s, "acme", "whsub_b", secretB)
	createWithSecret(t, s, "globex", "whsub_a", secretB) // same subscription ID, another tenant
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET secret = (SELECT secret FROM subscriptions
		WHERE tenant_id = 'acme' AND subscription_id = 'whsub_a') WHERE subscription_id = 'whsub_b' OR tenant_id = 'globex'`); err != nil {
		t.Fatal(err)
	}
	for _, row := range [][2]string{{"acme", "whsub_b"}, {"globex", "whsub_a"}} {
		got, err := s.GetSubscription(ctx, row[0], row[1])
		if err == nil || got.Secret == secretA {
			t.Fatalf("%v read %q, %v: a ciphertext moved from another row must not open", row, got.Secret, err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
		VALUES ('acme', 'delivery_1', 'whsub_b', 'evt_1', 'form.submitted', 'k', '{}', 'pending', now(), now(), now())`); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, domain.ClaimRequest{Limit: 10, PerSubscription: 10, Tenants: 10, DefaultRoom: 10, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if j := c.Jobs[0]; j.Secret != "" {
		t.Fatalf("the claimed job of whsub_b carries the secret %q moved from whsub_a", j.Secret)
	}
}
