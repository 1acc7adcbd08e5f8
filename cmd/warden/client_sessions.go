package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
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

// query is the page's query: ?limit= and ?after= when given.
func (o *pageOpts) query() (url.Values, error) {
	q := url.Values{}
	if *o.limit < 0 {
		return nil, usagef("--limit %d is negative", *o.limit)
	}
	if *o.limit > 0 {
		q.Set("limit", strconv.Itoa(*o.limit))
	}
	if *o.after != "" {
		q.Set("after", *o.after)
	}
	if o.status != nil && *o.status != "" {
		q.Set("status", strings.ToUpper(*o.status))
	}
	return q, nil
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

type sessionSummary struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

func sessionsList(ctx context.Context, c *apiClient, _ []string, opts any) error {
	q, err := opts.(*pageOpts).query()
	if err != nil {
		return err
	}
	var list struct {
		Sessions []sessionSummary `json:"sessions"`
		Next     string           `json:"next"`
	}
	if printed, err := c.get(ctx, "/v1/sessions", q, &list); printed || err != nil {
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

type sessionInfo struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Tasks   []apiTask `json:"tasks"`
}

func sessionsShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	var s sessionInfo
	if printed, err := c.get(ctx, "/v1/sessions/"+pathID(args[0]), nil, &s); printed || err != nil {
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
		rows = append(rows, []string{t.ID, t.Status, t.waitsFor(), oneLine(t.Objective)})
	}
	c.table(rows)
	return nil
}

func sessionsNew(ctx context.Context, c *apiClient, _ []string, _ any) error {
	var s sessionInfo
	if printed, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sessions"}, &s); printed || err != nil {
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
	q := url.Values{}
	if !*o.noWait {
		if *o.wait <= 0 || *o.wait > maxSendWait {
			return usagef("--wait %s is not between 0 and %s", *o.wait, maxSendWait)
		}
		q.Set("wait", o.wait.String())
	}
	r := jsonRequest(http.MethodPost, "/v1/sessions/"+pathID(args[0])+"/messages", q, map[string]string{"text": text})
	return c.runResult(ctx, args[0], r)
}
