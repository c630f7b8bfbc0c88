package store

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"

	"github.com/gantry-dev/gantry/internal/problem"
)

// ErrUnavailable matches every error of a database that did not answer
// (down, restarting, the connection cut): the request was not done, and the
// same request may work a moment later.
var ErrUnavailable = problem.New("database not answering", problem.Problem{Kind: problem.Unavailable,
	Title: "The database is not answering", Code: "database_unavailable",
	Detail: "The portal's database is not answering, so this was not done. Nothing you did before was lost: try again in a moment."})

// MarkUnavailable returns err marked with ErrUnavailable when it says the
// database did not answer, and err unchanged otherwise. Every query through
// the store is marked (see dialector); the session store marks its own.
func MarkUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !notAnswering(err) {
		return err
	}
	return &unavailableError{err: err}
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// notAnswering reports errors of a server that is gone, going or not
// there yet, as opposed to errors about the query itself.
func notAnswering(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: shutting down,
		// crashed, starting up.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dialector is gorm's PostgreSQL dialector whose error translation also
// marks a database that did not answer, so every query, begin and commit
// through gorm says so without each store method checking.
type dialector struct{ *postgres.Dialector }

// Translate translates as the PostgreSQL dialector does, then marks errors
// of a database that did not answer.
func (d dialector) Translate(err error) error { return MarkUnavailable(d.Dialector.Translate(err)) }
