module github.com/customerapi/platform/services/topics

go 1.26.0
