package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/app/reviewapi"
)

// withService is withStore with the review-task service on the same
// database. The service only queues its jobs (webhook deliveries): the
// running "service serve" works them.
func (a *adminFlags) withService(ctx context.Context, cmd string, now time.Time, fn func(*orgapi.Store, *reviewapi.Service) error) error {
	return a.withStore(ctx, cmd, now, func(store *orgapi.Store) error {
		svc, err := reviewapi.New(ctx, reviewapi.Config{DB: store.DB(), Orgs: store, InsertOnly: true,
			Now: func() time.Time { return now }})
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		defer svc.Close()
		return fn(store, svc)
	})
}

func adminReviewCommand() *command {
	return &command{
		name:    "review",
		summary: "the reviewer's work: the queue of tasks waiting for a person, and decisions",
		subs:    []*command{adminReviewDecideCommand(), adminReviewQueueCommand()},
	}
}

type reviewDecideFlags struct {
	adminFlags
	task, decision, comment string
}

func adminReviewDecideCommand() *command {
	f := &reviewDecideFlags{}
	return &command{
		name:    "decide",
		summary: "approve, reject or request changes on a task waiting for a person",
		long: `Records a reviewer's decision on a review task in requires_intervention and
prints the task as one JSON object. approve makes it approved, reject rejected,
request-changes change_requested; decision.by is "reviewer" and
decision.reviewer the --actor. A task.completed webhook event is queued; the
running service delivers it.

A task in any other state is refused (exit 1): final states never change.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, true)
			fs.StringVar(&f.task, "task", "", "`ID` of the review task (required)")
			fs.StringVar(&f.decision, "decision", "", "`DECISION`: approve, reject or request-changes (required)")
			fs.StringVar(&f.comment, "comment", "", "`TEXT` for the requester, kept in decision.comment")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			id, err := parseID(cmd, "task", f.task)
			if err != nil {
				return err
			}
			switch f.decision {
			case reviewapi.DecisionApprove, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges:
			case "":
				return usagef("%s: --decision is required: approve, reject or request-changes", cmd)
			default:
				return usagef("%s: --decision must be approve, reject or request-changes, got %q", cmd, f.decision)
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withService(ctx, cmd, time.Now(), func(_ *orgapi.Store, svc *reviewapi.Service) error {
				t, err := svc.Decide(ctx, id, f.decision, actor.Name, f.comment)
				switch {
				case errors.Is(err, reviewapi.ErrTaskNotFound):
					return fmt.Errorf("%s: no review task %s", cmd, id)
				case errors.Is(err, reviewapi.ErrFinal):
					return fmt.Errorf("%s: %w", cmd, err)
				case err != nil:
					return fmt.Errorf("%s: %w", cmd, err)
				}
				return writeJSONLine(e.stdout, t)
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
			org, err := parseID(cmd, "org", f.org)
			if err != nil {
				return err
			}
			return f.withService(ctx, cmd, time.Now(), func(store *orgapi.Store, svc *reviewapi.Service) error {
				if _, err := store.Organisation(ctx, org); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				tasks, err := svc.Queue(ctx, org)
				if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				return writeJSONLine(e.stdout, map[string]any{"organisationId": org, "tasks": tasks})
			})
		},
	}
}
