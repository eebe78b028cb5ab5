// Command quickstart makes a first call with the Go client: it creates a topic and lists
// every topic of the tenant with the iterator. CUSTOMER_API_KEY is the key;
// CUSTOMER_API_URL the gateway (http://127.0.0.1:25001).
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"

	customerapi "github.com/customerapi/platform/clients/go"
)

func main() {
	ctx := context.Background()
	api, err := customerapi.New(cmp.Or(os.Getenv("CUSTOMER_API_URL"), "http://127.0.0.1:25001"), os.Getenv("CUSTOMER_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	created, err := api.CreateTopicWithResponse(ctx, nil, customerapi.TopicCreate{Title: "Pricing (Go quickstart)"})
	if err != nil {
		log.Fatal(err) // a *customerapi.Error carries code, requestId and details
	}
	fmt.Println("created", created.JSON201.TopicId)
	n := 0
	for _, err := range customerapi.All(ctx, func(ctx context.Context, cursor *string) ([]customerapi.Topic, *string, error) {
		r, err := api.ListTopicsWithResponse(ctx, &customerapi.ListTopicsParams{Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return r.JSON200.Items, r.JSON200.NextCursor, nil
	}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("the tenant has", n, "topics")
}
