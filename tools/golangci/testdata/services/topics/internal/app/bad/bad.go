// Package bad breaks each rule of app once: five findings from list 'app'.
package bad

import (
	_ "github.com/customerapi/platform/libs/postgres"                     // a lib with an I/O driver
	_ "github.com/customerapi/platform/services/topics/internal/adapters" // another layer than domain and app
	_ "github.com/gofiber/fiber/v2"                                       // an HTTP framework
	_ "github.com/jackc/pgx/v5"                                           // a database driver
	_ "github.com/segmentio/kafka-go"                                     // a broker client
)
