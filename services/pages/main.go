// Command pages serves the pages context: pages, audiences, versions, messages, sessions and page links.
package main

import (
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/pages/internal/application"
)

func main() {
	service.Main(application.Name, application.DefaultAddr, application.Migrations, application.Setup)
}
