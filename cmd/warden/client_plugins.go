package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/client"
)

type installOpts struct {
	sha256, config *string
	wait           *time.Duration
}

type rollbackOpts struct {
	to   *uint64
	wait *time.Duration
}

var pluginCommands = map[string]clientCommand{
	"list": {args: "", help: "list the plugin slots and the generation each serves (admin key)", run: pluginsList},
	"show": {args: "SLOT", help: "show a slot: its generations, what each instance serves and holds ready, the newest rollout, refused candidates and the serving plugin's counters (admin key)",
		nargs: 1, run: pluginsShow},
	"install": {args: "[--sha256 HEX] [--config FILE] [--wait D] SLOT FILE.wasm", nargs: 2, run: pluginsInstall,
		help: "upload a module as the slot's next generation, pinned to --sha256 or else to the file's own digest, with --config as its configuration (JSON); every live instance sharing the store prepares it (verify, compile, configure, self-test), and it serves once every one has it ready; one refusal refuses it for all. --wait D waits up to D until every live instance serves it (admin key)",
		flags: func(fs *flag.FlagSet) any {
			return &installOpts{sha256: fs.String("sha256", "", ""), config: fs.String("config", "", ""), wait: fs.Duration("wait", 0, "")}
		}},
	"rollback": {args: "[--to N] [--wait D] SLOT", nargs: 1, run: pluginsRollback,
		help: "serve a kept generation of the slot again (--to N; by default the kept one before the desired one) as its next generation, on every instance sharing the store, as an install does; --wait D as install's (admin key)",
		flags: func(fs *flag.FlagSet) any {
			return &rollbackOpts{to: fs.Uint64("to", 0, ""), wait: fs.Duration("wait", 0, "")}
		}},
}

// short cuts a digest to the length a table shows.
func short(digest string) string {
	digest = strings.TrimPrefix(digest, "sha256:")
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

func pluginsList(ctx context.Context, c *apiClient, _ []string, _ any) error {
	list, err := c.api.Slots(ctx)
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Slots) == 0 {
		fmt.Fprintln(c.stdout, "no plugin slots")
		return nil
	}
	rows := [][]string{{"SLOT", "GENERATION", "PLUGIN", "DIGEST", "INSTALLED", "GENERATIONS"}}
	for _, s := range list.Slots {
		rows = append(rows, []string{s.Name, strconv.FormatUint(s.Current.Number, 10), s.Current.Ref, short(s.Current.Digest),
			stamp(s.Current.Installed), strconv.Itoa(len(s.Generations))})
	}
	c.table(rows)
	return nil
}

func pluginsShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	s, err := c.api.Slot(ctx, args[0])
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	c.printSlot(s)
	return nil
}

// printCounts prints the counters of a slot's kept generations, summed
// over the instances that served them: the calls served, by outcome, the
// latency buckets of the median and 99th percentile call, and the probes
// counted apart.
func (c *apiClient) printCounts(s *client.Slot) {
	rows := [][]string{{"STORED", "CALLS", "P50", "P99", "PROBES", "OUTCOMES", "INSTANCES"}}
	for _, g := range s.Kept {
		n := g.Counts
		if n == nil {
			continue
		}
		bound := func(v *float64) string {
			switch {
			case n.Calls == 0:
				return ""
			case v == nil:
				return "> 1s"
			}
			return "≤ " + strconv.FormatFloat(*v, 'f', -1, 64) + "ms"
		}
		var outcomes []string
		for k, v := range n.Outcomes {
			if v > 0 {
				outcomes = append(outcomes, fmt.Sprintf("%s %d", k, v))
			}
		}
		sort.Strings(outcomes)
		rows = append(rows, []string{strconv.FormatUint(g.Number, 10), strconv.FormatUint(n.Calls, 10), bound(n.P50Ms), bound(n.P99Ms),
			strconv.FormatUint(n.Probes, 10), strings.Join(outcomes, ", "), strings.Join(n.Instances, ", ")})
	}
	if len(rows) > 1 {
		fmt.Fprintln(c.stdout)
		c.table(rows)
	}
}

// printSlot prints a slot: what serves, its generations, what it refused
// and the serving plugin's counters.
func (c *apiClient) printSlot(s *client.Slot) {
	c.fields("slot", s.Name, "serving", fmt.Sprintf("generation %d, %s", s.Current.Number, s.Current.Ref),
		"digest", s.Current.Digest)
	fmt.Fprintln(c.stdout)
	rows := [][]string{{"GENERATION", "PLUGIN", "DIGEST", "INSTALLED", "RETIRED"}}
	for _, g := range s.Generations {
		retired := ""
		if g.Retired != nil {
			retired = stamp(*g.Retired)
		}
		rows = append(rows, []string{strconv.FormatUint(g.Number, 10), g.Ref, short(g.Digest), stamp(g.Installed), retired})
	}
	c.table(rows)
	if len(s.Kept) > 0 {
		fmt.Fprintln(c.stdout)
		rows := [][]string{{"STORED", "PLUGIN", "DIGEST", "ORIGIN", "BY", "TIME"}}
		for _, g := range s.Kept {
			origin := g.Origin
			if g.From > 0 {
				origin += " to " + strconv.FormatUint(g.From, 10)
			}
			rows = append(rows, []string{strconv.FormatUint(g.Number, 10), g.Ref, short(g.Digest), origin, g.Instance, stamp(g.Time)})
		}
		c.table(rows)
	}
	c.printCounts(s)
	if len(s.Instances) > 0 {
		fmt.Fprintln(c.stdout)
		rows := [][]string{{"INSTANCE", "SERVES", "DIGEST", "SINCE", "READY", "REFUSED"}}
		for _, in := range s.Instances {
			refused, ready := "", ""
			if in.Refused > 0 {
				refused = strconv.FormatUint(in.Refused, 10) + ": " + oneLine(in.Reason)
			}
			if in.Prepared > in.Serving {
				ready = strconv.FormatUint(in.Prepared, 10)
			}
			rows = append(rows, []string{in.Instance, strconv.FormatUint(in.Serving, 10), short(in.Digest), stamp(in.Since), ready, refused})
		}
		c.table(rows)
	}
	if ro := s.Rollout; ro != nil {
		fmt.Fprintln(c.stdout)
		c.printRollout(ro)
	}
	if len(s.Refused) > 0 {
		fmt.Fprintln(c.stdout)
		rows := [][]string{{"REFUSED", "DIGEST", "ORIGIN", "REASON"}}
		for _, r := range s.Refused {
			rows = append(rows, []string{stamp(r.Time), short(r.Digest), r.Origin, oneLine(r.Reason)})
		}
		c.table(rows)
	}
	if len(s.Stats) > 0 {
		fmt.Fprintln(c.stdout)
		names := make([]string, 0, len(s.Stats))
		for n := range s.Stats {
			names = append(names, n)
		}
		sort.Strings(names)
		rows := [][]string{{"COUNTER", "VALUE"}}
		for _, n := range names {
			rows = append(rows, []string{n, compactJSON(s.Stats[n])})
		}
		c.table(rows)
	}
}

func pluginsInstall(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*installOpts)
	module, err := os.ReadFile(args[1])
	if err != nil {
		return usagef("the module: %v", err)
	}
	// Pinned always: the operator's digest when given (a release's), else
	// the file's own, so that the server installs exactly what was read.
	pin := strings.TrimPrefix(*o.sha256, "sha256:")
	if pin == "" {
		sum := sha256.Sum256(module)
		pin = hex.EncodeToString(sum[:])
	}
	config := ""
	if *o.config != "" {
		cfg, err := os.ReadFile(*o.config)
		if err != nil {
			return usagef("--config: %v", err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, cfg); err != nil {
			return usagef("--config %s is not JSON: %v", *o.config, err)
		}
		config = buf.String()
	}
	if *o.wait < 0 {
		return usagef("--wait %s is negative", *o.wait)
	}
	s, err := c.api.InstallSlot(ctx, args[0], pin, module, config, *o.wait)
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	verb := "installed"
	if s.Answer.Status == http.StatusCreated {
		verb = "created"
	}
	c.rolloutLine(s, verb)
	return nil
}

// printRollout prints how far a slot generation has reached the live
// instances.
func (c *apiClient) printRollout(ro *client.Rollout) {
	kv := []string{"rollout", ro.ID, "state", ro.State}
	if len(ro.Ready) > 0 {
		kv = append(kv, "ready", strings.Join(ro.Ready, ", "))
	}
	if len(ro.Pending) > 0 {
		kv = append(kv, "pending", strings.Join(ro.Pending, ", "))
	}
	if ro.Deadline != nil {
		kv = append(kv, "deadline", stamp(*ro.Deadline))
	}
	if ro.State == "refused" {
		by := ro.By
		if by == "" {
			by = "(no answer by the deadline)"
		}
		kv = append(kv, "refused by", by, "code", ro.Code)
	}
	if ro.Reason != "" {
		kv = append(kv, "reason", oneLine(ro.Reason))
	}
	c.fields(kv...)
}

// rolloutLine says, after an install or a rollback, what serves and how
// far the generation is.
func (c *apiClient) rolloutLine(s *client.Slot, verb string) {
	ro := s.Rollout
	if s.Answer.Status == http.StatusAccepted && ro != nil {
		fmt.Fprintf(c.stdout, "slot %s: generation %d %s (ready: %s; pending: %s); generation %d serves here\n", s.Name, ro.Generation, ro.State,
			listOrNone(ro.Ready), listOrNone(ro.Pending), s.Serving)
		return
	}
	fmt.Fprintf(c.stdout, "slot %s %s: generation %d serves %s (%s)\n", s.Name, verb, s.Current.Number, s.Current.Ref, short(s.Current.Digest))
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func pluginsRollback(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*rollbackOpts)
	if *o.wait < 0 {
		return usagef("--wait %s is negative", *o.wait)
	}
	s, err := c.api.RollbackSlot(ctx, args[0], *o.to, *o.wait)
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	c.rolloutLine(s, "rolled back")
	return nil
}

var instanceCommands = map[string]clientCommand{
	"list": {args: "", help: "list the instances serving the API and their leases (admin key)", run: instancesList},
}

func instancesList(ctx context.Context, c *apiClient, _ []string, _ any) error {
	list, err := c.api.Instances(ctx)
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Instances) == 0 {
		fmt.Fprintln(c.stdout, "no instances")
		return nil
	}
	rows := [][]string{{"INSTANCE", "SESSIONS", "LEASE UNTIL"}}
	for _, in := range list.Instances {
		id := in.ID
		if in.Self {
			id += " (this one)"
		}
		rows = append(rows, []string{id, strconv.Itoa(in.Sessions), stamp(in.LeaseUntil)})
	}
	c.table(rows)
	return nil
}
