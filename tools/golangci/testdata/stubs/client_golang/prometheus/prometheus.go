// Package prometheus is a stub for the lint fixture.
package prometheus
