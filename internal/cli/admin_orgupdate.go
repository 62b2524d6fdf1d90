package cli

import (
	"context"
	"flag"
	"time"

	"github.com/aiusage/kit/internal/app/org"
)

// orgUpdateFlags are the flags of "admin org update".
type orgUpdateFlags struct {
	orgFlags
	name, plan  string
	hourlyLimit int
}

func adminOrgUpdateCommand() *command {
	f := &orgUpdateFlags{}
	return &command{
		name:    "update",
		summary: "change an organisation's name, plan or hourly limit and print it as JSON",
		long: `Changes the organisation --org: its name (--name), its plan (--plan) or the
hourly request limit of its enterprise plan (--hourly-limit), and prints it as
one JSON object, as 'admin org create' does. Flags left out keep their value;
at least one is required. The result is checked as 'admin org create' checks
it: --hourly-limit is required when the organisation moves to the enterprise
plan and refused with the other plans; a move away from enterprise drops the
limit.

The change is recorded in the organisation's audit trail (action
organisation.updated, with the organisation before and after). The
review-task API counts against the new limit from the next request: at once
in a service process that made the change, within 5 seconds in the others.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.name, "name", "", "new `NAME` of the organisation, 1 to 200 characters")
			fs.StringVar(&f.plan, "plan", "", "new `PLAN`: standard, business or enterprise")
			fs.IntVar(&f.hourlyLimit, "hourly-limit", 0, "hourly request limit `N` of the organisation (all its keys) on the enterprise plan, at least 1")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			u, err := f.update(cmd, fs)
			if err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o, err := d.orgs.UpdateOrganisation(ctx, orgID, u, actor)
				if err != nil {
					flagName := "hourly-limit" // what the plans' rules are about
					if u.Name != nil && (org.OrganisationCreate{Name: *u.Name}).Validate() != nil {
						flagName = "name"
					}
					return storeError(cmd, flagName, hintOrgs, err)
				}
				return d.print(o)
			})
		},
	}
}

// update checks the flags of "admin org update" that fs was given.
func (f *orgUpdateFlags) update(cmd string, fs *flag.FlagSet) (org.OrganisationUpdate, error) {
	var u org.OrganisationUpdate
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "name":
			if err == nil {
				err = required(cmd, "name", f.name)
			}
			u.Name = &f.name
		case "plan":
			p, perr := org.ParsePlan(f.plan)
			if perr != nil && err == nil {
				err = usagef("%s: --plan: %v", cmd, perr)
			}
			u.Plan = &p
		case "hourly-limit":
			if f.hourlyLimit < 1 && err == nil {
				err = usagef("%s: --hourly-limit must be at least 1, got %d", cmd, f.hourlyLimit)
			}
			u.HourlyLimit = &f.hourlyLimit
		}
	})
	if err != nil {
		return u, err
	}
	if u.Name == nil && u.Plan == nil && u.HourlyLimit == nil {
		return u, usagef("%s: nothing to change: give --name, --plan or --hourly-limit", cmd)
	}
	return u, nil
}
