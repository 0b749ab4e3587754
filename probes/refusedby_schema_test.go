package probes

import (
	"encoding/json"
	"os"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"
)

// The editor schema's refused-by (schema/probeset.schema.json) has the loader's keys, wherever an
// expectation may give it.
var _ = Describe("the JSON schema's refused-by", func() {
	It("is one definition with the loader's keys, used by expect, a family's entry and a mode's", func() {
		data, err := os.ReadFile("../schema/probeset.schema.json")
		gm.Expect(err).NotTo(gm.HaveOccurred())
		var root schemaNode
		gm.Expect(json.Unmarshal(data, &root)).To(gm.Succeed())
		rb := root.Definitions["refused-by"]
		gm.Expect(rb).NotTo(gm.BeNil())
		gm.Expect(rb.keys()).To(gm.Equal(sorted(refusedByKeys)))
		gm.Expect(rb.Properties["guard"].Pattern).To(gm.Equal(nameRE.String()))
		const ref = "#/definitions/refused-by"
		gm.Expect(root.Definitions["probe"].Properties["expect"].Properties["refused-by"].Ref).To(gm.Equal(ref))
		gm.Expect(root.Definitions["expect-platform"].Properties["refused-by"].Ref).To(gm.Equal(ref))
		gm.Expect(root.Definitions["expect-mode"].Properties["refused-by"].Ref).To(gm.Equal(ref))
	})
})
