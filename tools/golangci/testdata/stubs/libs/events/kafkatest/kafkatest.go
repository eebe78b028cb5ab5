// Package kafkatest is a stub for the lint fixture.
package kafkatest
