module github.com/customerapi/platform/examples

go 1.26.0

require github.com/customerapi/platform/clients/go v0.0.0

require github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect

replace github.com/customerapi/platform/clients/go => ../clients/go
