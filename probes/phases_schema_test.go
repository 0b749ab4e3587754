package probes

// An internal test: the phases entry keys are unexported. Gomega is not dot-imported here, as in
// schema_test.go.

import (
	"encoding/json"
	"os"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"
)

// The editor schema's phases entry has the loader's keys, a capture entry is a captures entry,
// and phases excludes the keys it replaces.
var _ = Describe("the JSON schema's phases", func() {
	type node struct {
		Ref        string           `json:"$ref"`
		Properties map[string]*node `json:"properties"`
		Required   []string         `json:"required"`
		OneOf      []*node          `json:"oneOf"`
		Not        *node            `json:"not"`
		AnyOf      []*node          `json:"anyOf"`
		Items      *node            `json:"items"`
	}
	var defs map[string]*node
	BeforeEach(func() {
		data, err := os.ReadFile("../schema/probeset.schema.json")
		gm.Expect(err).NotTo(gm.HaveOccurred())
		var root struct {
			Definitions map[string]*node `json:"definitions"`
		}
		gm.Expect(json.Unmarshal(data, &root)).To(gm.Succeed())
		defs = root.Definitions
	})

	It("has one entry form per key, the capture a captures entry", func() {
		gm.Expect(defs["probe"].Properties["phases"].Items.Ref).To(gm.Equal("#/definitions/phases-entry"))
		var keys []string
		for _, form := range defs["phases-entry"].OneOf {
			gm.Expect(form.Properties).To(gm.HaveLen(1))
			gm.Expect(form.Required).To(gm.HaveLen(1))
			keys = append(keys, form.Required[0])
			gm.Expect(form.Properties).To(gm.HaveKey(form.Required[0]))
		}
		gm.Expect(keys).To(gm.Equal(phaseKeys))
		gm.Expect(defs["phases-entry"].OneOf[1].Properties["capture"].Ref).To(gm.Equal("#/definitions/captures-entry"))
		gm.Expect(defs["phases-entry"].OneOf[0].Properties["eager"].Items.Ref).To(gm.Equal("#/definitions/op"))
	})

	It("has a begin entry and an end entry with the loader's keys", func() {
		keys := func(n *node) []string {
			var out []string
			for k := range n.Properties {
				out = append(out, k)
			}
			return sorted(out)
		}
		gm.Expect(defs["phases-entry"].OneOf[2].Properties["begin"].Ref).To(gm.Equal("#/definitions/begin-entry"))
		gm.Expect(keys(defs["begin-entry"])).To(gm.Equal(sorted(beginKeys)))
		gm.Expect(defs["begin-entry"].Required).To(gm.Equal([]string{"name"}))
		gm.Expect(defs["phases-entry"].OneOf[3].Properties["ops"].Items.Ref).To(gm.Equal("#/definitions/op"))
		gm.Expect(defs["phases-entry"].OneOf[4].Properties["end"].Ref).To(gm.Equal("#/definitions/end-entry"))
		gm.Expect(defs["end-entry"].OneOf).To(gm.HaveLen(2))
		gm.Expect(keys(defs["end-entry"].OneOf[1])).To(gm.Equal(sorted(endKeys)))
	})

	It("excludes the sections phases replaces", func() {
		var excluded []string
		for _, form := range defs["probe"].OneOf {
			if len(form.Required) == 1 && form.Required[0] == "phases" {
				for _, k := range form.Not.AnyOf {
					excluded = append(excluded, k.Required...)
				}
			}
		}
		var want []string
		for _, s := range sectionKeys {
			want = append(want, s.key)
		}
		gm.Expect(excluded).To(gm.Equal(want))
	})
})
