package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/client"
)

// maxSendWait is the longest wait the API takes (?wait=).
const maxSendWait = 5 * time.Minute

type pageOpts struct {
	limit  *int
	after  *string
	status *string
}

func pageFlags(fs *flag.FlagSet) any {
	return &pageOpts{limit: fs.Int("limit", 0, ""), after: fs.String("after", "", "")}
}

// page is the page the flags select.
func (o *pageOpts) page() (client.Page, error) {
	if *o.limit < 0 {
		return client.Page{}, usagef("--limit %d is negative", *o.limit)
	}
	p := client.Page{Limit: *o.limit, After: *o.after}
	if o.status != nil {
		p.Status = *o.status
	}
	return p, nil
}

type sendOpts struct {
	wait   *time.Duration
	noWait *bool
}

var sessionCommands = map[string]clientCommand{
	"list": {args: "[--limit N] [--after CURSOR]", help: "list the tenant's sessions, newest first",
		flags: pageFlags, run: sessionsList},
	"show": {args: "SESSION", help: "show a session and its tasks", nargs: 1, run: sessionsShow},
	"new":  {args: "", help: "open a session and print its id", run: sessionsNew},
	"send": {args: "[--wait DURATION | --no-wait] SESSION TEXT...", nargs: -1,
		help: "post a user message (TEXT - reads it from stdin) and wait for the task: its status, output, or what it waits for",
		flags: func(fs *flag.FlagSet) any {
			return &sendOpts{wait: fs.Duration("wait", maxSendWait, ""), noWait: fs.Bool("no-wait", false, "")}
		}, run: sessionsSend},
}

func sessionsList(ctx context.Context, c *apiClient, _ []string, opts any) error {
	p, err := opts.(*pageOpts).page()
	if err != nil {
		return err
	}
	list, err := c.api.Sessions(ctx, p)
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Sessions) == 0 {
		fmt.Fprintln(c.stdout, "no sessions")
		return nil
	}
	rows := [][]string{{"SESSION", "CREATED"}}
	for _, s := range list.Sessions {
		rows = append(rows, []string{s.ID, stamp(s.Created)})
	}
	c.table(rows)
	if list.Next != "" {
		fmt.Fprintf(c.stdout, "more: warden sessions list --after %s\n", list.Next)
	}
	return nil
}

func sessionsShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	s, err := c.api.Session(ctx, args[0])
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	c.fields("session", s.ID, "created", stamp(s.Created))
	if len(s.Tasks) == 0 {
		fmt.Fprintln(c.stdout, "no tasks")
		return nil
	}
	fmt.Fprintln(c.stdout)
	rows := [][]string{{"TASK", "STATUS", "WAITS FOR", "OBJECTIVE"}}
	for _, t := range s.Tasks {
		rows = append(rows, []string{t.ID, t.Status, waitsFor(t), oneLine(t.Objective)})
	}
	c.table(rows)
	return nil
}

func sessionsNew(ctx context.Context, c *apiClient, _ []string, _ any) error {
	s, err := c.api.NewSession(ctx)
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, s.ID)
	return nil
}

func sessionsSend(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*sendOpts)
	if len(args) < 2 {
		return usagef("want a session and the message's text")
	}
	text := strings.Join(args[1:], " ")
	if len(args) == 2 && args[1] == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("read the message from stdin: %w", err)
		}
		text = strings.TrimRight(string(b), "\n")
	}
	var wait time.Duration
	if !*o.noWait {
		if *o.wait <= 0 || *o.wait > maxSendWait {
			return usagef("--wait %s is not between 0 and %s", *o.wait, maxSendWait)
		}
		wait = *o.wait
	}
	res, err := c.api.SendMessage(ctx, args[0], text, wait)
	return c.runResult(args[0], res, err)
}
