package measure

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report as a table, one row per measurement read: its status, the rule
// (profile, place and evidence, then its situation), the instance and step read, what the profile
// says and what the device did; then what each disagreement means, the rows that decided nothing
// and why, the verify rules no measurement names, and a count.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	against := "the embedded profile"
	if r.Against != "" {
		against = r.Against
	}
	fmt.Fprintf(&b, "measure: %s (backend %s) against profile %s (%s), table %s\n\n", r.Platform, r.Backend, r.Profile, against, r.Table)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "result\trule\tinstance\tstep\tprofile says\tdevice did")
	for _, row := range r.Rows {
		did := "-"
		if row.Did != nil {
			did = row.Did.String()
		}
		inst, step := strings.TrimSuffix(row.Instance, "/guards-off"), row.Step
		if inst == "" {
			inst, step = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Status, row.ruleName(), inst, step, row.Says, did)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	for _, row := range r.Rows {
		switch row.Status {
		case Disagree:
			notes = append(notes, fmt.Sprintf("disagree: %s, %s: %s", row.ruleName(), row.Instance, row.Otherwise))
		case Inconclusive:
			notes = append(notes, fmt.Sprintf("inconclusive: %s, %s: %s", row.ruleName(), row.Instance, row.Why))
		case NotMeasured:
			notes = append(notes, fmt.Sprintf("not measured: %s: %s", row.ruleName(), row.Why))
		}
	}
	for _, u := range r.Uncovered {
		notes = append(notes, fmt.Sprintf("no measurement: %s rule %q is tagged verify and no measurement of %s names it", r.Profile, u, r.Table))
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString(n + "\n")
		}
	}
	fmt.Fprintf(&b, "\n%d measurements: %d agree, %d disagree, %d inconclusive, %d not measured\n",
		len(r.Rows), r.Count(Agree), r.Count(Disagree), r.Count(Inconclusive), r.Count(NotMeasured))
	_, err := io.WriteString(w, b.String())
	return err
}

// ruleName names a row's rule: "cuda rule 31 (verify): synchronous copy while ...".
func (row Row) ruleName() string {
	return fmt.Sprintf("%s rule %d (%s): %s", row.Profile, row.RuleIndex, row.Evidence, row.Rule)
}

// WriteJSON writes the report as one indented JSON document (Report's field tags), with a summary
// of the counts.
func WriteJSON(w io.Writer, r *Report) error {
	doc := struct {
		*Report
		Summary map[Status]int `json:"summary"`
		Failed  bool           `json:"failed"`
	}{r, map[Status]int{Agree: r.Count(Agree), Disagree: r.Count(Disagree), Inconclusive: r.Count(Inconclusive), NotMeasured: r.Count(NotMeasured)}, r.Failed()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
