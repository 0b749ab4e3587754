package reports_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/reports"
)

// validate checks a decoded JSON value against the subset of JSON Schema that reports.Schema
// uses: type, enum, pattern, properties, required, additionalProperties, items, anyOf and $ref.
// It returns every problem, each with its JSON path.
func validate(root map[string]any, schema map[string]any, v any, path string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		def := root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		return validate(root, def, v, path)
	}
	if alts, ok := schema["anyOf"].([]any); ok {
		var all []string
		for _, alt := range alts {
			probs := validate(root, alt.(map[string]any), v, path)
			if len(probs) == 0 {
				return nil
			}
			all = append(all, probs...)
		}
		return []string{path + ": matches none of anyOf: " + strings.Join(all, "; ")}
	}
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, path+": "+fmt.Sprintf(format, args...)) }
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v is not one of %v", v, enum)
	}
	switch schema["type"] {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			break
		}
		props, _ := schema["properties"].(map[string]any)
		required, _ := schema["required"].([]any)
		for _, r := range required {
			if _, ok := obj[r.(string)]; !ok && props != nil {
				bad("required %q missing", r)
			}
		}
		for k, x := range obj {
			if sub, ok := props[k].(map[string]any); ok {
				probs = append(probs, validate(root, sub, x, path+"."+k)...)
			} else if add, ok := schema["additionalProperties"].(map[string]any); ok {
				probs = append(probs, validate(root, add, x, path+"."+k)...)
			} else {
				bad("%q is not in the schema", k)
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			if v != nil {
				bad("want an array, got %T", v)
			}
			break
		}
		for i, x := range arr {
			probs = append(probs, validate(root, schema["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			bad("want a string, got %T", v)
		} else if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(s) {
			bad("%q does not match %s", s, p)
		}
	case "integer", "number":
		if _, ok := v.(float64); !ok {
			bad("want a number, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	case "null":
		if v != nil {
			bad("want null, got %T", v)
		}
	}
	return probs
}

// decoded round-trips v through JSON into generic values.
func decoded(v any) map[string]any {
	GinkgoHelper()
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out map[string]any
	Expect(json.Unmarshal(data, &out)).To(Succeed())
	return out
}

var _ = Describe("the report's JSON Schema", func() {
	It("is schema/report.schema.json (go test ./reports -update rewrites it)", func() {
		var buf bytes.Buffer
		Expect(reports.WriteJSONValue(&buf, reports.Schema())).To(Succeed())
		path := filepath.Join("..", "schema", "report.schema.json")
		if *update {
			Expect(os.WriteFile(path, buf.Bytes(), 0o644)).To(Succeed())
			return
		}
		want, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(buf.Bytes()).To(matchGolden("report.schema.json", want))
	})

	It("accepts the JSON report of every shape the writers render", func() {
		var buf bytes.Buffer
		cuda := sampleReport(reports.Options{AllTimelines: true})
		cuda.Platform, cuda.Profile = "sim/cuda", "cuda"
		cuda.NotRun = []string{"basic/copy@relaxed/guards-on"}
		Expect(reports.WriteJSON(&buf, sampleReport(reports.Options{AllTimelines: true}), cuda)).To(Succeed())
		var doc map[string]any
		Expect(json.Unmarshal(buf.Bytes(), &doc)).To(Succeed())
		schema := decoded(reports.Schema())
		Expect(validate(schema, schema, doc, "$")).To(BeEmpty())
	})

	It("rejects what the writers never write", func() {
		schema := decoded(reports.Schema())
		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, sampleReport(reports.Options{}))).To(Succeed())
		var doc map[string]any
		Expect(json.Unmarshal(buf.Bytes(), &doc)).To(Succeed())
		r := doc["results"].([]any)[0].(map[string]any)
		r["outcome"] = "fine"
		r["colour"] = "blue"
		delete(r, "id")
		Expect(validate(schema, schema, doc, "$")).To(ConsistOf(
			ContainSubstring(`outcome: fine is not one of`), ContainSubstring(`"colour" is not in the schema`), ContainSubstring(`required "id" missing`)))
	})
})

var _ = Describe("the JSON report of the whole catalog", func() {
	It("is valid against the schema, every timeline kept", func(ctx SpecContext) {
		sets, err := probes.Load(probes.DefaultLimits(), filepath.Join("..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		var all []*probes.Probe
		for _, s := range sets {
			all = append(all, s.Probes...)
		}
		b, err := sim.New(sim.Options{Profile: "cuda"})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		defer dev.Close()
		rep := reports.New("replaycheck", "test", reports.Options{AllTimelines: true})
		rep.Backend, rep.Platform, rep.Profile = "sim", dev.Platform(), "cuda"
		for _, in := range probes.Instances(all, probes.Matrix{Replays: 2}) {
			rep.Add(capture.Run(ctx, dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})}))
		}
		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, rep)).To(Succeed())
		var doc map[string]any
		Expect(json.Unmarshal(buf.Bytes(), &doc)).To(Succeed())
		schema := decoded(reports.Schema())
		Expect(validate(schema, schema, doc, "$")).To(BeEmpty())
	})
})
