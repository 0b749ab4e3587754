package reports

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
	"github.com/replaycheck/replaycheck/watch"
)

// Schema is the JSON Schema (draft 2020-12) of the JSON report (Document), derived from the Go
// types that write it, so the two cannot drift: every struct is an object whose properties are
// its JSON fields (required unless omitempty), and the closed vocabularies (outcomes, verdicts,
// rules, error kinds, classes, phases, accesses, capture modes, threads) are enums. schema/
// report.schema.json is this value, written by `go test ./reports -update`.
func Schema() map[string]any {
	g := &schemaGen{defs: map[string]any{}, types: map[string]reflect.Type{}}
	root := g.of(reflect.TypeFor[Document]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = "https://github.com/replaycheck/replaycheck/schema/report.schema.json"
	root["title"] = "replaycheck report"
	root["description"] = "The JSON report of `replaycheck run --format json`, of the Ginkgo suite (-replaycheck.report=FILE.json) and of `replaycheck watch` (watch, findings): docs/report-format.md."
	root["$defs"] = g.defs
	return root
}

type schemaGen struct {
	defs  map[string]any
	types map[string]reflect.Type // the type each of defs describes
}

var (
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
)

// enums are the closed vocabularies of the report, by type.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[probes.Outcome]():      {"exact", "rejected", "refused", "corrupted", "error", "skipped"},
	reflect.TypeFor[verdict.Status]():      {string(verdict.Pass), string(verdict.Fail), string(verdict.Skip), string(verdict.Uncharacterised)},
	reflect.TypeFor[verdict.Rule]():        {string(verdict.RuleSkipped), string(verdict.RuleError), string(verdict.RuleNoExpectation), string(verdict.RuleOutcome), string(verdict.RuleRejectedBy), string(verdict.RuleRefusedBy), string(verdict.RuleDrift), string(verdict.RuleBaseline)},
	reflect.TypeFor[capture.ErrorKind]():   {string(capture.ErrSetup), string(capture.ErrTimeout), string(capture.ErrInterrupted), string(capture.ErrLeak), string(capture.ErrSideEffect), string(capture.ErrRuntime), string(capture.ErrHarness), string(capture.ErrCrash), string(capture.ErrFault), string(capture.ErrDeviceLost)},
	reflect.TypeFor[capture.DeviceState](): {string(capture.DeviceLost), string(capture.DeviceAbandoned)},
	reflect.TypeFor[capture.Phase]():       {string(capture.PhaseSetup), string(capture.PhasePrepare), string(capture.PhaseCapture), string(capture.PhaseCleanup), string(capture.PhaseBetween), string(capture.PhaseEager), string(capture.PhaseEach), string(capture.PhaseReplay), string(capture.PhaseVerify), string(capture.PhaseTeardown)},
	reflect.TypeFor[capture.Access]():      {string(capture.AccessRead), string(capture.AccessWrite), string(capture.AccessReadWrite)},
	reflect.TypeFor[device.CaptureMode]():  names(device.CaptureModes()),
	reflect.TypeFor[device.Thread]():       {device.Main.String(), device.Other.String()},
	reflect.TypeFor[device.Class]():        classNames(),
	reflect.TypeFor[probes.Hazard]():       hazardNames(),
	reflect.TypeFor[watch.Kind]():          watchKinds(),
}

// nullable are the pointer types of fields the writers may write as null (a finding outside any
// graph has "graph": null): their schema is the type's or null.
var nullable = map[reflect.Type]bool{
	reflect.TypeFor[*watch.Graph](): true,
	reflect.TypeFor[*watch.Range](): true,
}

func watchKinds() []string {
	out := make([]string, len(watch.Kinds))
	for i, k := range watch.Kinds {
		out[i] = string(k)
	}
	return out
}

func names[T interface{ String() string }](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func classNames() []string {
	var out []string
	for _, c := range device.Classes() {
		out = append(out, string(c))
	}
	return out
}

func hazardNames() []string {
	var out []string
	for _, h := range probes.Hazards() {
		out = append(out, string(h))
	}
	return out
}

// of is the schema of one type.
func (g *schemaGen) of(t reflect.Type) map[string]any {
	if vs, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": vs}
	}
	switch t {
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	case reflect.TypeFor[time.Duration]():
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	case reflect.TypeFor[device.Ptr]():
		return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"addr", "bytes"},
			"properties": map[string]any{
				"addr":  map[string]any{"type": "string", "pattern": "^0x[0-9a-f]+$", "description": "the device or host address, hex"},
				"bytes": map[string]any{"type": "integer"},
			}}
	case reflect.TypeFor[probes.Step]():
		return map[string]any{"type": "string", "description": "a probe step: PHASE op N, capture NAME op N|begin|end, or replay ROUND NAME"}
	case reflect.TypeFor[json.RawMessage]():
		return map[string]any{"type": "object", "additionalProperties": map[string]any{}, "description": "the run's configuration as the run layer records it (run.Config)"}
	case reflect.TypeFor[capture.Timeline]():
		return g.of(reflect.TypeFor[[]capture.Event]())
	case reflect.TypeFor[capture.Bytes]():
		return map[string]any{"type": "string", "pattern": "^([0-9a-f]{2})*$", "description": "bytes, hex"}
	}
	if t.Kind() != reflect.Pointer && (t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		return map[string]any{"type": "string"}
	}
	if t.Implements(jsonMarshaler) {
		panic("reports.Schema: no schema for " + t.String() + ", which marshals itself")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		name := t.Name()
		if prev, ok := g.types[name]; ok && prev != t {
			// $defs are keyed by bare name: two packages' types of one name would share a schema.
			panic("reports.Schema: " + prev.String() + " and " + t.String() + " would share $defs/" + name)
		}
		if _, done := g.defs[name]; !done {
			g.types[name] = t
			g.defs[name] = map[string]any{} // breaks cycles
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	panic("reports.Schema: no schema for " + t.String())
}

// object is a struct's schema: its JSON fields, embedded structs inlined.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range jsonFields(t) {
		ft := t.FieldByIndex(f.index).Type
		props[f.name] = g.of(ft)
		if nullable[ft] && !f.optional {
			props[f.name] = map[string]any{"anyOf": []any{props[f.name], map[string]any{"type": "null"}}}
		}
		if !f.optional {
			required = append(required, f.name)
		}
	}
	slices.Sort(required)
	out := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// jsonField is a struct field as JSON writes it.
type jsonField struct {
	index    []int
	name     string
	optional bool // omitempty or omitzero: may be left out
}

var fieldCache sync.Map // reflect.Type -> []jsonField

// jsonFields are t's JSON fields in order, embedded structs' inlined, as Schema writes them and
// CheckEntry reads them.
func jsonFields(t reflect.Type) []jsonField {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]jsonField)
	}
	var out []jsonField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			at := append(slices.Clone(index), i)
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, at)
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, jsonField{index: at, name: name,
				optional: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")})
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}
