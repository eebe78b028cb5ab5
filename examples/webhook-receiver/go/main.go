// Command webhook-receiver receives the Customer API's webhooks on POST /webhook and
// verifies each with the Go library (clients/go/webhooks) before reading it.
//
//	WEBHOOK_SECRET=whsec_… go run ./examples/webhook-receiver/go
//
// WEBHOOK_SECRET may list several secrets, comma-separated, during a rotation; ADDR is
// the listen address (127.0.0.1:4000).
package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/customerapi/platform/clients/go/webhooks"
)

func main() {
	verifier, err := webhooks.NewVerifier(strings.Split(os.Getenv("WEBHOOK_SECRET"), ",")...)
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET: %v", err)
	}
	http.HandleFunc("POST /webhook", func(w http.ResponseWriter, r *http.Request) {
		// Verify the raw bytes first: webhook-signature signs the event ID, the time and
		// the body, so a tampered, foreign or replayed request is refused.
		body, err := verifier.VerifyRequest(r)
		if err != nil {
			fmt.Printf("refused: %v\n", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var event struct {
			EventID string `json:"eventId"`
			// Test is true for a test event (POST …/test), whose IDs point at no real
			// object. The X-Webhook-Test header says the same, but only the body is signed.
			Test    bool `json:"test"`
			Payload struct {
				Type string `json:"type"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		if event.Test {
			// A real receiver acknowledges it and does no work for it.
			fmt.Printf("verified %s %s (test)\n", event.EventID, event.Payload.Type)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// Deliveries arrive at least once: deduplicate on event.EventID in real code.
		fmt.Printf("verified %s %s\n", event.EventID, event.Payload.Type)
		w.WriteHeader(http.StatusNoContent)
	})
	addr := cmp.Or(os.Getenv("ADDR"), "127.0.0.1:4000")
	fmt.Printf("listening on http://%s/webhook\n", addr)
	log.Fatal(http.ListenAndServe(addr, nil))
}
