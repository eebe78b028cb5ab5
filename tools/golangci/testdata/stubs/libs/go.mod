module github.com/customerapi/platform/libs

go 1.26.0
