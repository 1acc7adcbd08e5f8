package feedback

import (
	"cmp"
	"slices"
)

// CodeCount is how many failures carried one code.
type CodeCount struct {
	Code  string `json:"code,omitempty"` // wire form
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Row summarises the records of one tool or one category.
type Row struct {
	Name      string `json:"name"`
	Calls     int    `json:"calls"`
	Successes int    `json:"successes"`
	// Failures counts FAILED and REJECTED calls; Deferred the calls told to
	// wait for a prerequisite step.
	Failures int `json:"failures"`
	Deferred int `json:"deferred"`
	// ByCode splits the failures by code, most frequent first.
	ByCode []CodeCount `json:"by_code"`
	// Stalls is the no-progress turns the calls contributed.
	Stalls int     `json:"stalls"`
	Weight float64 `json:"weight"`
}

// Report is the summary of feedback records. Rows come with the most
// stalls first, then the most failures, then the most calls, then by name.
type Report struct {
	Records    int   `json:"records"`
	Tools      []Row `json:"tools"`
	Categories []Row `json:"categories"`
}

// NoCode names failures that carried no code.
const NoCode = "UNKNOWN"

// Summarize groups records per tool and per error category (records with
// no category, such as successes, count only under their tool).
func Summarize(records []Record) Report {
	tools := map[string]*Row{}
	cats := map[string]*Row{}
	for _, r := range records {
		add(tools, r.Tool, r)
		if r.Category != "" {
			add(cats, r.Category, r)
		}
	}
	return Report{Records: len(records), Tools: rows(tools), Categories: rows(cats)}
}

func add(m map[string]*Row, name string, r Record) {
	row := m[name]
	if row == nil {
		row = &Row{Name: name, ByCode: []CodeCount{}}
		m[name] = row
	}
	row.Calls++
	row.Stalls += r.StallsAdded
	row.Weight += r.Weight
	switch r.Outcome {
	case "SUCCESS":
		row.Successes++
	case "DEFERRED":
		row.Deferred++
	default:
		row.Failures++
		name := r.Name
		if name == "" {
			name = NoCode
		}
		i := slices.IndexFunc(row.ByCode, func(c CodeCount) bool { return c.Name == name })
		if i < 0 {
			row.ByCode = append(row.ByCode, CodeCount{Code: r.Code, Name: name})
			i = len(row.ByCode) - 1
		}
		row.ByCode[i].Count++
	}
}

func rows(m map[string]*Row) []Row {
	out := make([]Row, 0, len(m))
	for _, r := range m {
		slices.SortFunc(r.ByCode, func(a, b CodeCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
		})
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(b.Stalls, a.Stalls), cmp.Compare(b.Failures, a.Failures),
			cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Name, b.Name))
	})
	return out
}
