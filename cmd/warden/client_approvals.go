package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/client"
)

// arguments is the held write's arguments as the approval question shows
// them (label: value, sensitive values masked). Without a summary the
// bound arguments are not shown: they may hold what the summary masks.
func arguments(a *client.Approval) string {
	if len(a.ArgsSummary) == 0 {
		return "(no summary; --json shows the held arguments)"
	}
	parts := make([]string, len(a.ArgsSummary))
	for i, l := range a.ArgsSummary {
		parts[i] = l.Label + ": " + l.Value
	}
	return strings.Join(parts, "; ")
}

var approvalCommands = map[string]clientCommand{
	"list": {args: "[--status PENDING|CONFIRMED|REJECTED|CANCELLED|STALE] [--limit N] [--after CURSOR]",
		help: "list the tenant's approvals, newest first",
		flags: func(fs *flag.FlagSet) any {
			o := pageFlags(fs).(*pageOpts)
			o.status = fs.String("status", "", "")
			return o
		}, run: approvalsList},
	"show":    {args: "APPROVAL", help: "show a held write: its tool, arguments, digest and question", nargs: 1, run: approvalsShow},
	"confirm": {args: "[--wait DURATION] APPROVAL", help: "confirm the held write and run the task on", nargs: 1, flags: waitFlag, run: decide("CONFIRM")},
	"reject":  {args: "[--wait DURATION] APPROVAL", help: "reject the held write; the task goes on without it", nargs: 1, flags: waitFlag, run: decide("REJECT")},
	"cancel":  {args: "[--wait DURATION] APPROVAL", help: "cancel the task the write belongs to", nargs: 1, flags: waitFlag, run: decide("CANCEL")},
}

func approvalsList(ctx context.Context, c *apiClient, _ []string, opts any) error {
	p, err := opts.(*pageOpts).page()
	if err != nil {
		return err
	}
	list, err := c.api.Approvals(ctx, p)
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Approvals) == 0 {
		fmt.Fprintln(c.stdout, "no approvals")
		return nil
	}
	rows := [][]string{{"APPROVAL", "STATUS", "SESSION", "TASK", "TOOL", "CREATED", "QUESTION"}}
	for _, a := range list.Approvals {
		rows = append(rows, []string{a.ID, a.Status, a.Session, a.Task, a.Tool, stamp(a.Created), oneLine(a.Question)})
	}
	c.table(rows)
	if list.Next != "" {
		fmt.Fprintf(c.stdout, "more: warden approvals list --after %s\n", list.Next)
	}
	return nil
}

func approvalsShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	a, err := c.api.Approval(ctx, args[0])
	if done, err := printed(c, a, err); done || err != nil {
		return err
	}
	answered := ""
	if a.Answered != nil {
		answered = stamp(*a.Answered)
	}
	c.fields("approval", a.ID, "status", a.Status, "session", a.Session, "task", a.Task, "node", a.Node,
		"tool", a.Tool, "arguments", arguments(a), "digest", a.ArgsDigest, "question", a.Question,
		"created", stamp(a.Created), "answered", answered)
	return nil
}

// decide answers an approval with decision and prints how its task stands.
func decide(decision string) func(ctx context.Context, c *apiClient, args []string, opts any) error {
	return func(ctx context.Context, c *apiClient, args []string, opts any) error {
		wait, err := opts.(*waitOpts).duration()
		if err != nil {
			return err
		}
		res, err := c.api.Decide(ctx, args[0], decision, wait)
		if done, err := printed(c, res, err); done || err != nil {
			return err
		}
		session := ""
		if res.Approval != nil {
			session = res.Approval.Session
		}
		if session == "" {
			// The answer names the task only: its session is the
			// approval's.
			if a, err := c.api.Approval(ctx, args[0]); err == nil {
				session = a.Session
			}
		}
		c.describeTask(session, res.Task, res.Approval)
		return nil
	}
}
