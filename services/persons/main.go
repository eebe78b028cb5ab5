// Command persons serves the persons context: persons, accounts, their logs, and the
// enrichment of form submissions.
package main

import (
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/persons/internal/application"
)

func main() {
	service.Main(application.Name, application.DefaultAddr, application.Migrations, application.Setup)
}
