// Package adapters is what the other packages of this fixture must not import.
package adapters
