// Package kafka is a stub for the lint fixture.
package kafka
