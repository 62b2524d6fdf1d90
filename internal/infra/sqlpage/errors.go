package sqlpage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"

	"github.com/aiusage/kit/provider"
)

// DBError turns an error of the database driver into one of a data
// source's, its message prefixed with pkg and op: the context's error when
// ctx ended, [provider.ErrUnavailable] for a lost connection, otherwise an
// error carrying only the driver's message (never its type).
func DBError(ctx context.Context, pkg, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %s: %w", pkg, op, cerr)
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %s: %w", pkg, op, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: %w", pkg, op, context.DeadlineExceeded)
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.As(err, &ne):
		return fmt.Errorf("%s: %s: %w: %v", pkg, op, provider.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %s: %v", pkg, op, err)
}
