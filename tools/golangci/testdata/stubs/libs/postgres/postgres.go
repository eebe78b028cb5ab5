// Package postgres is a stub for the lint fixture.
package postgres
