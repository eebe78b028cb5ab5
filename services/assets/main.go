// Command assets serves the assets context: uploads, stored bytes, the trash lifecycle,
// previews and signed downloads.
package main

import (
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/assets/internal/application"
)

func main() {
	service.Main(application.Name, application.DefaultAddr, application.Migrations, application.Setup)
}
