package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentwarden/warden/feedback"
)

const reportUsage = `usage: warden report tools [--json] FILE...

Summarises feedback record files (JSON lines) per tool and per error
category, the tools causing the most stalls first.
`

// cmdReport runs "warden report tools [--json] FILE...".
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) int {
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
	asJSON := false
	var files []string
	for _, a := range args[1:] {
		switch {
		case a == "--json" || a == "-json":
			asJSON = true
		case a == "-h" || a == "--help":
			fmt.Fprint(stdout, reportUsage)
			return 0
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "warden report: unknown flag %s\n\n%s", a, reportUsage)
			return 2
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "warden report: no feedback file given\n\n%s", reportUsage)
		return 2
	}
	var recs []feedback.Record
	for _, f := range files {
		r, err := readFeedback(f)
		if err != nil {
			fmt.Fprintf(stderr, "warden report: %s: %v\n", f, err)
			return 2
		}
		recs = append(recs, r...)
	}
	rep := feedback.Summarize(recs)
	if asJSON {
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
