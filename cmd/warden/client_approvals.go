package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// apiApproval is a held approval as the API shows it.
type apiApproval struct {
	ID         string          `json:"id"`
	Session    string          `json:"session"`
	Task       string          `json:"task"`
	Node       string          `json:"node"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ArgsDigest string          `json:"argsDigest"`
	// ArgsSummary is the bound arguments as the question shows them,
	// sensitive values masked: what the client prints.
	ArgsSummary []struct {
		Label string `json:"label"`
		Value string `json:"value"`
	} `json:"args_summary"`
	Question string     `json:"question"`
	Status   string     `json:"status"`
	Created  time.Time  `json:"created"`
	Answered *time.Time `json:"answered"`
}

// arguments is the held write's arguments as the approval question shows
// them (label: value, sensitive values masked). Without a summary the
// bound arguments are not shown: they may hold what the summary masks.
func (a *apiApproval) arguments() string {
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
	q, err := opts.(*pageOpts).query()
	if err != nil {
		return err
	}
	var list struct {
		Approvals []apiApproval `json:"approvals"`
		Next      string        `json:"next"`
	}
	if printed, err := c.get(ctx, "/v1/approvals", q, &list); printed || err != nil {
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
	var a apiApproval
	if printed, err := c.get(ctx, "/v1/approvals/"+pathID(args[0]), nil, &a); printed || err != nil {
		return err
	}
	answered := ""
	if a.Answered != nil {
		answered = stamp(*a.Answered)
	}
	c.fields("approval", a.ID, "status", a.Status, "session", a.Session, "task", a.Task, "node", a.Node,
		"tool", a.Tool, "arguments", a.arguments(), "digest", a.ArgsDigest, "question", a.Question,
		"created", stamp(a.Created), "answered", answered)
	return nil
}

// decide answers an approval with decision and prints how its task stands.
func decide(decision string) func(ctx context.Context, c *apiClient, args []string, opts any) error {
	return func(ctx context.Context, c *apiClient, args []string, opts any) error {
		q, err := opts.(*waitOpts).query()
		if err != nil {
			return err
		}
		r := jsonRequest(http.MethodPost, "/v1/approvals/"+pathID(args[0]), q, map[string]string{"decision": decision})
		var res runResult
		if printed, err := c.call(ctx, r, &res); printed || err != nil {
			return err
		}
		session := ""
		if res.Approval != nil {
			session = res.Approval.Session
		}
		if session == "" {
			// The answer names the task only: its session is the
			// approval's.
			var a apiApproval
			if _, b, err := c.send(ctx, request{method: http.MethodGet, path: "/v1/approvals/" + pathID(args[0])}); err == nil && json.Unmarshal(b, &a) == nil {
				session = a.Session
			}
		}
		c.describeTask(session, res.Task, res.Approval)
		return nil
	}
}
