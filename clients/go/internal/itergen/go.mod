// The iterator generator of the Go client (iterators.gen.go). Its own module, so the
// client's module needs no YAML library: `make clients-iterators` or `go generate` in
// clients/go runs it with GOWORK=off.
module github.com/customerapi/platform/clients/go/internal/itergen

go 1.26.0

require gopkg.in/yaml.v3 v3.0.1
