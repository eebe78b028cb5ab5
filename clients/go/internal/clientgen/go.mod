// The generator of the Go client's iterators and the code samples (cmd clientgen). Its own module, so the
// client's module needs no YAML library: `make clients-iterators` or `go generate` in
// clients/go runs it with GOWORK=off.
module github.com/customerapi/platform/clients/go/internal/clientgen

go 1.26.0

require (
	github.com/getkin/kin-openapi v0.152.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.14.0 // indirect
)
