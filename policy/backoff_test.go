package policy_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
)

// waitErr is a policy.Backoff asking for d, wrapping err.
type waitErr struct {
	d   time.Duration
	err error
}

func (e waitErr) Error() string          { return fmt.Sprintf("wait %s", e.d) }
func (e waitErr) Backoff() time.Duration { return e.d }
func (e waitErr) Unwrap() error          { return e.err }

func TestBackoffOf(t *testing.T) {
	require.Zero(t, policy.BackoffOf(nil))
	require.Zero(t, policy.BackoffOf(errors.New("plain")))
	require.Equal(t, 3*time.Second, policy.BackoffOf(fmt.Errorf("policy: semantic matcher: %w", waitErr{d: 3 * time.Second})))
	// Through errors.Join (the review service joins the cause with its own
	// error), and the longest of nested ones.
	nested := waitErr{d: time.Second, err: waitErr{d: 7 * time.Second}}
	require.Equal(t, 7*time.Second, policy.BackoffOf(errors.Join(errors.New("db"), fmt.Errorf("x: %w", nested))))
}
