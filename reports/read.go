package reports

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/watch"
)

// Reading a report back: a file is as good as a run only when it holds what a run writes, so a
// reader refuses, rather than renders, a value outside the schema's closed vocabularies (Schema's
// enums: an outcome "bogus" would otherwise be counted as an outcome of its own, a verdict status
// "bogus" as neither pass nor fail) and an instance held twice by one run (it would be counted
// twice). Unknown fields are ignored: a newer writer may add some (docs/report-format.md,
// Stability).

// OnceEach says why a report or journal naming an instance twice is refused, and where such files
// came from.
const OnceEach = "a run holds each instance once (builds before 2026-12-04 ran a probe given twice to --probe, or a profile to --profile, twice)"

// ReadError is what is wrong with a JSON report, and where: Line (1-based), ID, the instance of
// the result at fault, and Path, the JSON path of the value at fault ("results[3].verdict.status";
// "" when the JSON itself does not parse). Line is 0 and ID "" where they cannot be told.
// NotReport says that the data is not a report at all (it does not parse as JSON, or has no
// "runs"), rather than a report with a value at fault.
type ReadError struct {
	Line      int
	ID        string
	Path      string
	Err       error
	NotReport bool
}

// Error reads "line L: instance ID: PATH: what is wrong", leaving out what is not known.
func (e *ReadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Detail())
	}
	return e.Detail()
}

// Detail is Error without the line, for a reader that writes FILE:LINE: itself.
func (e *ReadError) Detail() string {
	var b strings.Builder
	if e.ID != "" {
		b.WriteString("instance " + e.ID + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ReadError) Unwrap() error { return e.Err }

// ReadDocument reads a JSON report (WriteJSON's Document) from data and checks every result with
// CheckEntry and every watch finding with CheckFinding, and that a platform's run holds each instance id once and that runs[] names every
// result's platform. Its error is a *ReadError: NotReport when data is not a report at all,
// otherwise naming the first value at fault by its line and JSON path.
func ReadDocument(data []byte) (*Document, error) {
	var d Document
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&d); err != nil {
		return nil, decodeError(data, err)
	}
	if d.Runs == nil {
		return nil, &ReadError{Err: errors.New(`no "runs"`), NotReport: true}
	}
	at := func(id string, path []any, err error) error {
		return &ReadError{Line: lineOf(data, path), ID: id, Path: pathString(path), Err: err}
	}
	platforms := map[string]bool{}
	for _, r := range d.Runs {
		platforms[r.Platform] = true
	}
	type key struct{ platform, id string }
	first := map[key]int{}
	for i := range d.Results {
		e := &d.Results[i]
		if err := CheckEntry(e); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return nil, at(e.ID, append([]any{"results", i}, fe.Path...), errors.New(fe.Problem()))
			}
			return nil, at(e.ID, []any{"results", i}, err)
		}
		if !platforms[e.Platform] {
			return nil, at(e.ID, []any{"results", i, "platform"}, fmt.Errorf("platform %q, which no run in runs[] names", e.Platform))
		}
		k := key{e.Platform, e.ID}
		if j, dup := first[k]; dup {
			return nil, at(e.ID, []any{"results", i}, fmt.Errorf("again on %s (first at results[%d], line %d): %s",
				e.Platform, j, lineOf(data, []any{"results", j}), OnceEach))
		}
		first[k] = i
	}
	for i := range d.Findings {
		if err := CheckFinding(&d.Findings[i]); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return nil, at("", append([]any{"findings", i}, fe.Path...), errors.New(fe.Problem()))
			}
			return nil, at("", []any{"findings", i}, err)
		}
	}
	return &d, nil
}

// CheckFinding reports the first value of a watch finding outside the schema's closed
// vocabularies (its kind), as CheckEntry does for an entry.
func CheckFinding(f *watch.Finding) error {
	return checkValue(reflect.ValueOf(f).Elem(), nil)
}

// decodeError says where decoding data failed: at the offset the JSON error names, or, for a value
// a type refused without saying where (an unknown capture mode, thread or step), at the first result
// that does not decode on its own.
func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &ReadError{Line: lineAt(data, syn.Offset), Err: err, NotReport: true}
	case errors.As(err, &typ):
		// A report with a value of the wrong type: outside the schema, not "not a report".
		return &ReadError{Line: lineAt(data, typ.Offset), Path: typ.Field, Err: err}
	}
	if i, off, raw := failingResult(data); raw != nil {
		var id struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &id)
		return &ReadError{Line: lineAt(data, off), ID: id.ID, Path: pathString([]any{"results", i}), Err: err}
	}
	return &ReadError{Err: err}
}

// failingResult finds the first element of data's top-level "results" that does not decode as an
// Entry on its own: its index, offset and text (nil when every one decodes).
func failingResult(data []byte) (int, int64, json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if !enter(dec, "results") {
		return 0, 0, nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return 0, 0, nil
	}
	for i := 0; dec.More(); i++ {
		off := valueStart(data, dec.InputOffset())
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return 0, 0, nil
		}
		var e Entry
		if json.Unmarshal(raw, &e) != nil {
			return i, off, raw
		}
	}
	return 0, 0, nil
}

// enter moves dec, at the start of an object, to the value of its member key.
func enter(dec *json.Decoder, key string) bool {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if k == key {
			return true
		}
		if skipValue(dec) != nil {
			return false
		}
	}
	return false
}

func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// lineOf is the line of data on which the value at path (object keys and array indices) begins;
// 0 when data has no such value.
func lineOf(data []byte, path []any) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	for _, step := range path {
		switch step := step.(type) {
		case string:
			if !enter(dec, step) {
				return 0
			}
		case int:
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return 0
			}
			for range step {
				if !dec.More() || skipValue(dec) != nil {
					return 0
				}
			}
			if !dec.More() {
				return 0
			}
		}
	}
	return lineAt(data, valueStart(data, dec.InputOffset()))
}

// valueStart is the offset of the value that follows off: past the separators and white space a
// json.Decoder leaves before it.
func valueStart(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// FieldError is a value of an entry outside the report's schema: Path is its JSON path within the
// entry (keys and indices, e.g. "verdict", "status"), Value what it holds ("" when it is missing)
// and Want the values the schema allows.
type FieldError struct {
	Path  []any
	Value string
	Want  []string
}

func (e *FieldError) Error() string { return pathString(e.Path) + ": " + e.Problem() }

// Problem is what is wrong, without the path.
func (e *FieldError) Problem() string {
	if e.Value == "" {
		return "missing: want one of " + strings.Join(e.Want, ", ") + " (schema/report.schema.json)"
	}
	return fmt.Sprintf("%q is not one of %s (schema/report.schema.json)", e.Value, strings.Join(e.Want, ", "))
}

func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// CheckEntry reports the first value of e outside the schema's closed vocabularies (Schema's
// enums: outcome, verdict status and rule, error kind, rejection class, phase, access, ...), in
// the order the fields are written, as a *FieldError; nil when every one is in its vocabulary. A
// field the schema requires must hold one of its values; an optional one may be left out.
func CheckEntry(e *Entry) error {
	return checkValue(reflect.ValueOf(e).Elem(), nil)
}

var (
	timelineType    = reflect.TypeFor[capture.Timeline]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// checkValue checks v, found at path, against the schema's enums.
func checkValue(v reflect.Value, path []any) error {
	t := v.Type()
	if want, ok := enums[t]; ok {
		s := v.String()
		if v.Kind() != reflect.String {
			text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return &FieldError{Path: slices.Clone(path), Value: err.Error(), Want: want}
			}
			s = string(text)
		}
		if !slices.Contains(want, s) {
			return &FieldError{Path: slices.Clone(path), Value: s, Want: want}
		}
		return nil
	}
	if t == timelineType {
		for i, ev := range v.Interface().(capture.Timeline).Events() {
			if err := checkValue(reflect.ValueOf(ev), append(path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	// A type that reads itself (an address, a step, bytes) has checked what it read.
	if reflect.PointerTo(t).Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return checkValue(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkValue(v.Index(i), append(path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			if err := checkValue(v.MapIndex(k), append(path, fmt.Sprint(k))); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for _, f := range jsonFields(t) {
			fv := v.FieldByIndex(f.index)
			if f.optional && fv.IsZero() {
				continue
			}
			if err := checkValue(fv, append(path, f.name)); err != nil {
				return err
			}
		}
	}
	return nil
}
