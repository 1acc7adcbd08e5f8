package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

const reportUsage = `usage: warden report tools [--json] [--tenant NAME] [--tool NAME] [--since WHEN] FILE...
       warden report tools [--json] [--tenant NAME] [--tool NAME] [--since WHEN] --store sqlite:PATH|postgres:URL

Summarises feedback records per tool and per error category, the tools
causing the most stalls first. The records come from JSON-line files
(warden run --feedback; - is standard input) or from the database warden
serve records them in (--store, as given to warden serve).

  --json          print the summary as JSON
  --store KIND    sqlite:PATH or postgres:URL, instead of files
  --tenant NAME   only the records of this tenant
  --tool NAME     only the records of this tool
  --since WHEN    only the records since WHEN: a duration back from now
                  (24h, 90m) or a time (2026-01-02, 2026-01-02T15:04:05Z)
`

// reportFlags are the flags of "warden report tools".
type reportFlags struct {
	json bool
	// dialect and dsn are --store's; dialect is "" without it.
	dialect sqlstore.Dialect
	dsn     string
	filter  feedback.Filter
	files   []string
}

// cmdReport runs "warden report tools".
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "tools" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, reportUsage)
			return 0
		}
		if len(args) > 0 {
			fmt.Fprintf(stderr, "warden report: unknown report %q\n\n", args[0])
		}
		fmt.Fprint(stderr, reportUsage)
		return 2
	}
	f, err := parseReportFlags(args[1:], time.Now())
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, reportUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "warden report: %v\n\n%s", err, reportUsage)
		return 2
	}
	var recs []feedback.Record
	if f.dialect != "" {
		if recs, err = storedFeedback(ctx, f.dialect, f.dsn, f.filter); err != nil {
			fmt.Fprintf(stderr, "warden report: --store: %v\n", err)
			return 2
		}
	}
	for _, name := range f.files {
		r, err := readFeedback(name)
		if err != nil {
			fmt.Fprintf(stderr, "warden report: %s: %v\n", name, err)
			return 2
		}
		for _, rec := range r {
			if f.filter.Match(rec) {
				recs = append(recs, rec)
			}
		}
	}
	rep := feedback.Summarize(recs)
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "warden report: %v\n", err)
			return 1
		}
		return 0
	}
	writeReport(stdout, rep)
	return 0
}

// parseReportFlags parses the arguments after "tools". Flags may come
// before or after the files, as --flag VALUE or --flag=VALUE, with one
// dash or two; now is what a --since duration counts back from.
func parseReportFlags(args []string, now time.Time) (f reportFlags, err error) {
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			f.files = append(f.files, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		switch name {
		case "h", "help":
			return f, flag.ErrHelp
		case "json":
			if hasValue {
				return f, fmt.Errorf("--json takes no value")
			}
			f.json = true
			continue
		case "store", "tenant", "tool", "since":
		default:
			return f, fmt.Errorf("unknown flag %s", a)
		}
		if !hasValue {
			if i+1 == len(args) {
				return f, fmt.Errorf("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if seen[name] {
			return f, fmt.Errorf("--%s given twice", name)
		}
		seen[name] = true
		if value == "" {
			return f, fmt.Errorf("--%s needs a value", name)
		}
		switch name {
		case "store":
			if f.dialect, f.dsn, err = storeFlag(value); err != nil {
				return f, fmt.Errorf("--store: %w", err)
			}
		case "tenant":
			f.filter.Tenant = value
		case "tool":
			f.filter.Tool = value
		case "since":
			t, err := parseSince(value, now)
			if err != nil {
				return f, err
			}
			f.filter.Since = t
		}
	}
	switch {
	case f.dialect != "" && len(f.files) > 0:
		return f, fmt.Errorf("give feedback files or --store, not both")
	case f.dialect == "" && len(f.files) == 0:
		return f, fmt.Errorf("no feedback file given (or --store)")
	}
	return f, nil
}

// parseSince reads a --since value: a positive duration back from now, a
// date (midnight UTC) or an RFC 3339 time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--since %s: a duration back from now must be positive", v)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (24h), a date (2026-01-02) or an RFC 3339 time (2026-01-02T15:04:05Z)", v)
}

// storeFlag reads a --store value: sqlite:PATH or postgres:URL (the URL
// keeps its own scheme: postgres:postgres://u@h/db). A value of another
// kind is named by its scheme alone, which holds no password.
func storeFlag(v string) (sqlstore.Dialect, string, error) {
	scheme, rest, _ := strings.Cut(v, ":")
	switch {
	case scheme == "sqlite" && rest != "":
		return sqlstore.SQLite, rest, nil
	case scheme == "postgres" && rest != "":
		return sqlstore.Postgres, rest, nil
	case scheme == "sqlite":
		return "", "", fmt.Errorf("%q has no PATH after sqlite:", v)
	case scheme == "postgres":
		return "", "", fmt.Errorf("%q has no URL after postgres:", v)
	default:
		return "", "", fmt.Errorf("%q… is not sqlite:PATH or postgres:URL", scheme)
	}
}

// storedFeedback reads the records f selects from a database. A SQLite
// file must exist: a mistyped path must not report an empty new database.
func storedFeedback(ctx context.Context, d sqlstore.Dialect, dsn string, f feedback.Filter) ([]feedback.Record, error) {
	if d == sqlstore.SQLite {
		if _, err := os.Stat(dsn); err != nil {
			return nil, err
		}
	}
	db, err := sqlstore.Open(ctx, d, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Feedback(ctx, f)
}

func readFeedback(name string) ([]feedback.Record, error) {
	if name == "-" {
		return feedback.Read(os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return feedback.Read(f)
}

func writeReport(w io.Writer, rep feedback.Report) {
	fmt.Fprintf(w, "%d records\n\n", rep.Records)
	table(w, "TOOL", rep.Tools)
	fmt.Fprintln(w)
	table(w, "CATEGORY", rep.Categories)
}

func table(w io.Writer, head string, rows []feedback.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tCALLS\tOK\tFAILED\tDEFERRED\tSTALLS\tWEIGHT\tFAILURES BY CODE\n", head)
	for _, r := range rows {
		codes := make([]string, len(r.ByCode))
		for i, c := range r.ByCode {
			codes[i] = c.Name + ":" + strconv.Itoa(c.Count)
		}
		by := strings.Join(codes, " ")
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Name, r.Calls, r.Successes, r.Failures,
			r.Deferred, r.Stalls, strconv.FormatFloat(r.Weight, 'f', 1, 64), by)
	}
	tw.Flush()
}
