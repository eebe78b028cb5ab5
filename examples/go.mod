module github.com/customerapi/platform/examples

go 1.26.0

require github.com/customerapi/platform/clients/go v0.0.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.5.0 // indirect
	github.com/oapi-codegen/runtime v1.1.2 // indirect
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect
)

replace github.com/customerapi/platform/clients/go => ../clients/go
