package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/spec"
)

func adminReviewCommand() *command {
	return &command{
		name:    "review",
		summary: "the reviewer's work: the queue of tasks waiting for a person, and decisions",
		subs:    []*command{adminReviewDecideCommand(), adminReviewQueueCommand(), adminReviewSettingsCommand()},
	}
}

type reviewDecideFlags struct {
	adminFlags
	task, decision, as, comment string
}

func adminReviewDecideCommand() *command {
	f := &reviewDecideFlags{}
	return &command{
		name:    "decide",
		summary: "decide a task waiting for a person, as a Reviewer or Administrator of its organisation",
		long: `Records a person's decision on a review task in requires_intervention and
prints the task as one JSON object. Decisions come from people: --as names a
user (by email) of the task's organisation with the Reviewer or
Administrator role, not disabled; the decision is recorded as theirs
(decision.by "reviewer", decision.reviewer their email, decision.reviewerId
their id) and the audit trail names them. Anyone else, including a user of
another organisation, is refused (exit 1).

--decision is one of:
  approve           approved, the request as sent (a redacted proposal is
                    dropped from the task)
  approve-redacted  approved, the redacted copy the policy proposed
                    (redactedRequest); only when the task has one
  reject            rejected
  request-changes   change_requested

A task.completed webhook event is queued; the running service delivers it.
A task in any other state, or past its review deadline, is refused (exit 1):
final states never change.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, false)
			fs.StringVar(&f.task, "task", "", "`ID` of the review task (required)")
			fs.StringVar(&f.decision, "decision", "", "`DECISION`: approve, approve-redacted, reject or request-changes (required)")
			fs.StringVar(&f.as, "as", "", "`EMAIL` of the person deciding: a Reviewer or Administrator of the task's organisation (required)")
			fs.StringVar(&f.comment, "comment", "", "`TEXT` for the requester, kept in decision.comment")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			id, err := parseID(cmd, "task", f.task)
			if err != nil {
				return err
			}
			switch {
			case f.decision == "":
				return usagef("%s: --decision is required: approve, approve-redacted, reject or request-changes", cmd)
			case reviewapi.Decision{Choice: f.decision}.Validate() != nil:
				return usagef("%s: --decision must be approve, approve-redacted, reject or request-changes, got %q", cmd, f.decision)
			}
			if strings.TrimSpace(f.as) == "" {
				return usagef("%s: --as is required: the email of a Reviewer or Administrator of the task's organisation", cmd)
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				store := d.orgs
				svc, err := d.reviews()
				if err != nil {
					return err
				}
				ppl, err := people.New(ctx, people.Config{DB: store.DB(), Orgs: store})
				if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				u, err := ppl.UserByEmail(ctx, f.as)
				if errors.Is(err, spec.ErrNotFound) {
					return fmt.Errorf("%s: no user with email %s; people are added with 'aiusage admin user create'", cmd, strings.TrimSpace(f.as))
				} else if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				t, err := decide(ctx, svc, id, reviewapi.Decision{Choice: f.decision, UserID: u.ID, Comment: f.comment})
				switch {
				case errors.Is(err, reviewapi.ErrTaskNotFound):
					return fmt.Errorf("%s: no review task %s", cmd, id)
				case errors.Is(err, reviewapi.ErrNotReviewer):
					return fmt.Errorf("%s: %s may not decide task %s: %w", cmd, u.Email, id, err)
				case err != nil:
					return fmt.Errorf("%s: %w", cmd, err)
				}
				return d.print(t)
			})
		},
	}
}

// decide records d on the task id of whichever organisation has it.
func decide(ctx context.Context, svc *reviewapi.Service, id string, d reviewapi.Decision) (spec.ReviewTask, error) {
	orgID, err := svc.TaskOrganisation(ctx, id)
	if err != nil {
		return spec.ReviewTask{}, err
	}
	return svc.Decide(ctx, orgID, id, d)
}

type reviewSettingsFlags struct {
	adminFlags
	org, timeout, outcome string
}

func adminReviewSettingsCommand() *command {
	f := &reviewSettingsFlags{}
	return &command{
		name:    "settings",
		summary: "show or change an organisation's review timeout and what the timeout does",
		long: `Prints the organisation's review settings as one JSON object:
{"reviewTimeout", "reviewTimeoutSeconds", "timeoutOutcome", "defaultTimeout"}.

With --timeout or --timeout-outcome it changes them first, and records the
change in the organisation's audit trail with --actor:
  --timeout D           how long a task waits for a person, 1m to 2160h
                        (90 days); 0 restores the service's default
                        (service serve --review-timeout). Tasks already
                        waiting keep their deadline.
  --timeout-outcome O   what the timeout does to a task nobody decided in
                        time: reject (the default) or approve (the redacted
                        copy when the policy proposed one, else the request
                        as sent). Either way the decision is recorded as the
                        system's, with reason timeout, and the webhooks get
                        task.timeout and then task.completed.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, true)
			fs.StringVar(&f.org, "org", "", "`ID` of the organisation (required)")
			fs.StringVar(&f.timeout, "timeout", "", "review timeout `D` (1m to 2160h); 0 restores the service's default")
			fs.StringVar(&f.outcome, "timeout-outcome", "", "`OUTCOME` of a timeout: reject or approve")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := parseID(cmd, "org", f.org)
			if err != nil {
				return err
			}
			switch f.outcome {
			case "", reviewapi.TimeoutReject, reviewapi.TimeoutApprove:
			default:
				return usagef("%s: --timeout-outcome must be reject or approve, got %q", cmd, f.outcome)
			}
			var timeout time.Duration
			if f.timeout != "" {
				if timeout, err = time.ParseDuration(f.timeout); err != nil {
					return usagef("%s: --timeout must be a duration such as 30m, 24h or 72h, got %q", cmd, f.timeout)
				}
				if timeout != 0 && (timeout < reviewapi.MinReviewTimeout || timeout > reviewapi.MaxReviewTimeout) {
					return usagef("%s: --timeout must be from %s to %s, or 0 for the service's default; got %s", cmd,
						reviewapi.MinReviewTimeout, reviewapi.MaxReviewTimeout, timeout)
				}
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				store := d.orgs
				svc, err := d.reviews()
				if err != nil {
					return err
				}
				if _, err := store.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				st, err := svc.Settings(ctx, orgID)
				if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				if f.timeout != "" || f.outcome != "" {
					if st.DefaultTimeout {
						st.ReviewTimeout = 0
					}
					if f.timeout != "" {
						st.ReviewTimeout = timeout
					}
					if f.outcome != "" {
						st.TimeoutOutcome = f.outcome
					}
					if st, err = svc.SetSettings(ctx, orgID, st, actor); err != nil {
						return fmt.Errorf("%s: %w", cmd, err)
					}
				}
				return d.print(st)
			})
		},
	}
}

type reviewQueueFlags struct {
	adminFlags
	org string
}

func adminReviewQueueCommand() *command {
	f := &reviewQueueFlags{}
	return &command{
		name:    "queue",
		summary: "list an organisation's tasks waiting for a person",
		long: `Prints {"organisationId", "tasks": [...]}: the organisation's review tasks in
requires_intervention, oldest first, each with its request, the reasons
(matching instructions and spans) and its reviewDeadline.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, false)
			fs.StringVar(&f.org, "org", "", "`ID` of the organisation (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := parseID(cmd, "org", f.org)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				store := d.orgs
				svc, err := d.reviews()
				if err != nil {
					return err
				}
				if _, err := store.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				tasks, err := svc.Queue(ctx, orgID)
				if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				return d.print(map[string]any{"organisationId": orgID, "tasks": tasks})
			})
		},
	}
}
