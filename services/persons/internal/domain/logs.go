package domain

// LogOwner is what a log entry belongs to: a person or an account.
type LogOwner int

// The owners of logs.
const (
	PersonLogs LogOwner = iota
	AccountLogs
)

// NotFound is the error of an owner that does not exist.
func (o LogOwner) NotFound() error {
	if o == AccountLogs {
		return ErrAccountNotFound
	}
	return ErrPersonNotFound
}
