// Command topics serves the topics context: topics and their entries.
package main

import (
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/topics/internal/application"
)

func main() {
	service.Main(application.Name, application.DefaultAddr, application.Migrations, application.Setup)
}
