module github.com/customerapi/platform/services/topics

go 1.26.0

require (
	github.com/customerapi/platform/libs v0.0.0
	github.com/gofiber/fiber/v2 v2.0.0
	github.com/jackc/pgx/v5 v5.0.0
	github.com/prometheus/client_golang v1.0.0
	github.com/segmentio/kafka-go v0.0.0
)

replace (
	github.com/customerapi/platform/libs => ../../stubs/libs
	github.com/gofiber/fiber/v2 => ../../stubs/fiber
	github.com/jackc/pgx/v5 => ../../stubs/pgx
	github.com/prometheus/client_golang => ../../stubs/client_golang
	github.com/segmentio/kafka-go => ../../stubs/kafka-go
)
