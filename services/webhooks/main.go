// Command webhooks serves the webhooks context: subscriptions and the signed,
// at-least-once delivery of public events to them.
package main

import (
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

func main() {
	service.Main(application.Name, application.DefaultAddr, application.Migrations, application.Setup)
}
