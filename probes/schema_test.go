package probes

// An internal test: the loader's key tables are unexported. Gomega is not dot-imported here
// because its Expect would collide with the Expect type.

import (
	"encoding/json"
	"os"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// schemaNode is the part of a JSON Schema this test reads.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Properties           map[string]*schemaNode `json:"properties"`
	Required             []string               `json:"required"`
	Enum                 []string               `json:"enum"`
	Pattern              string                 `json:"pattern"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Definitions          map[string]*schemaNode `json:"definitions"`
}

func (n *schemaNode) keys() []string {
	var out []string
	for k := range n.Properties {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// The editor schema (schema/probeset.schema.json) must accept the keys and values the loader
// accepts; this keeps the two from drifting apart.
var _ = Describe("the JSON schema", func() {
	var root schemaNode
	BeforeEach(func() {
		data, err := os.ReadFile("../schema/probeset.schema.json")
		gm.Expect(err).NotTo(gm.HaveOccurred())
		gm.Expect(json.Unmarshal(data, &root)).To(gm.Succeed())
	})
	def := func(name string) *schemaNode {
		GinkgoHelper()
		d := root.Definitions[name]
		gm.Expect(d).NotTo(gm.BeNil(), "definition %s", name)
		return d
	}

	It("has the loader's keys at every level", func() {
		gm.Expect(root.keys()).To(gm.Equal(sorted(setKeys)))
		gm.Expect(root.Properties["defaults"].keys()).To(gm.Equal(sorted(defaultsKeys)))
		probe := def("probe")
		gm.Expect(probe.keys()).To(gm.Equal(sorted(probeKeys)))
		var buffer schemaNode
		gm.Expect(json.Unmarshal(probe.Properties["buffers"].AdditionalProperties, &buffer)).To(gm.Succeed())
		gm.Expect(buffer.keys()).To(gm.Equal(sorted(bufferKeys)))
		gm.Expect(def("capture").keys()).To(gm.Equal(sorted(captureKeys)))
		gm.Expect(def("captures-entry").keys()).To(gm.Equal(sorted(capturesItemKeys)))
		gm.Expect(probe.Properties["replay"].keys()).To(gm.Equal(sorted(replayKeys)))
		gm.Expect(probe.Properties["expect"].keys()).To(gm.Equal(sorted(expectKeys)))
		platforms := probe.Properties["expect"].Properties["platforms"]
		gm.Expect(platforms.keys()).To(gm.Equal(sorted(PlatformFamilies())))
		for _, family := range PlatformFamilies() {
			gm.Expect(platforms.Properties[family].Ref).To(gm.Equal("#/definitions/expect-platform"), "family %s", family)
		}
		gm.Expect(def("expect-platform").keys()).To(gm.Equal(sorted(platformExpectKeys)))
		gm.Expect(probe.Properties["expect"].Properties["modes"].Ref).To(gm.Equal("#/definitions/expect-modes"))
		gm.Expect(def("expect-platform").Properties["modes"].Ref).To(gm.Equal("#/definitions/expect-modes"))
		modes := def("expect-modes")
		gm.Expect(modes.keys()).To(gm.Equal(sorted(modeNames())))
		for _, mode := range modeNames() {
			gm.Expect(modes.Properties[mode].Ref).To(gm.Equal("#/definitions/expect-mode"), "mode %s", mode)
		}
		gm.Expect(def("expect-mode").keys()).To(gm.Equal(sorted(modeExpectKeys)))
	})

	It("has every op with its fields and required fields", func() {
		op := def("op")
		var kinds []string
		for _, k := range opKinds {
			kinds = append(kinds, string(k))
		}
		gm.Expect(op.keys()).To(gm.Equal(sorted(kinds)))
		for kind, spec := range opFields {
			body := op.Properties[string(kind)]
			gm.Expect(body.keys()).To(gm.Equal(sorted(spec.keys)), "op %s", kind)
			gm.Expect(body.Required).To(gm.ConsistOf(spec.keys[:spec.required]), "op %s", kind)
		}
	})

	It("has the loader's closed sets", func() {
		probe := def("probe")
		gm.Expect(probe.Properties["hazard"].Enum).To(gm.Equal(hazardNames()))
		gm.Expect(probe.Properties["requires"].Items.Enum).To(gm.Equal(device.CapabilityNames()))
		gm.Expect(probe.Properties["expect"].Properties["rejected-by"].Items.Enum).To(gm.Equal(classNames()))
		gm.Expect(probe.Properties["expect"].Properties["guarded"].Enum).To(gm.Equal(guardedOutcomes))
		gm.Expect(probe.Properties["expect"].Properties["unguarded"].Enum).To(gm.Equal(unguardedOutcomes))
		override := def("expect-platform")
		gm.Expect(override.Properties["rejected-by"].Items.Enum).To(gm.Equal(classNames()))
		gm.Expect(override.Properties["guarded"].Enum).To(gm.Equal(guardedOutcomes))
		gm.Expect(override.Properties["unguarded"].Enum).To(gm.Equal(unguardedOutcomes))
		mode := def("expect-mode")
		gm.Expect(mode.Properties["rejected-by"].Items.Enum).To(gm.Equal(classNames()))
		gm.Expect(mode.Properties["guarded"].Enum).To(gm.Equal(guardedOutcomes))
		gm.Expect(mode.Properties["unguarded"].Enum).To(gm.Equal(unguardedOutcomes))
		gm.Expect(def("slot").Enum).To(gm.Equal(slotNames))
		gm.Expect(def("thread").Enum).To(gm.Equal(threadNames))
		gm.Expect(probe.Properties["faults"].Items.Pattern).To(gm.Equal("^(" + strings.Join(stringers(device.FaultKinds()), "|") + ")@[1-9][0-9]{0,6}$"))
	})
})
