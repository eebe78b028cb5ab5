// Package pgx is a stub for the lint fixture.
package pgx
