package reports

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes rep as one indented JSON document: the run's header, "summary" and "results",
// one object per instance (see Entry for the field names).
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Calls and reasons quote code like "y += 3 * x"; HTML escaping would only make them unreadable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}
