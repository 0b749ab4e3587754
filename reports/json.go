package reports

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes rep as one indented JSON document: the run's header, "summary", "results" (one
// object per instance, see Entry for the field names) and, when set, "enforcement".
func WriteJSON(w io.Writer, rep *Report) error { return WriteJSONValue(w, rep) }

// WriteJSONValue writes any report value (a Report, a Table, several runs) as one indented JSON
// document.
func WriteJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Calls and reasons quote code like "y += 3 * x"; HTML escaping would only make them unreadable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}
