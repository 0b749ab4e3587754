package probes_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/probes"
)

// nodes counts the nodes yaml.v3 builds for data, the document node included; an alias is one
// node (the parse builds no copy of what it stands for).
func nodes(data []byte) int {
	var doc yaml.Node
	Expect(yaml.Unmarshal(data, &doc)).To(Succeed())
	var count func(*yaml.Node) int
	count = func(n *yaml.Node) int {
		c := 1
		for _, k := range n.Content {
			c += count(k)
		}
		return c
	}
	return count(&doc)
}

// randomTree is a random value of maps, lists and scalars, scalars sometimes holding the
// punctuation the bound counts, or nothing.
func randomTree(rng *rand.Rand, depth int) any {
	scalars := []any{"a", "b-c", "- x", "k: v", "1,2", "[x]", "{y}", "?", "", nil, 7, 3.5, true, "line one\nline two"}
	switch k := rng.IntN(4); {
	case depth == 0 || k == 0:
		return scalars[rng.IntN(len(scalars))]
	case k == 1:
		l := make([]any, rng.IntN(5))
		for i := range l {
			l[i] = randomTree(rng, depth-1)
		}
		return l
	default:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[[]string{"a", "dst", "src-offset", "x y", "k:"}[rng.IntN(5)]+string(rune('a'+rng.IntN(26)))] = randomTree(rng, depth-1)
		}
		return m
	}
}

// flow turns every collection of a node tree to flow style ({a: 1}, [x, y]).
func flow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for _, k := range n.Content {
		flow(k)
	}
}

var _ = Describe("the value bound counted before parsing", func() {
	check := func(what string, data []byte) {
		GinkgoHelper()
		Expect(probes.ValueBound(data)).To(BeNumerically(">=", nodes(data)), "%s:\n%s", what, data)
	}

	It("is at least the nodes YAML builds, for every probe file of the repository", func() {
		var files []string
		for _, glob := range []string{"../specs/*.yaml", "testdata/*/*.yaml", "../cmd/replaycheck/testdata/*.yaml"} {
			m, err := filepath.Glob(glob)
			Expect(err).NotTo(HaveOccurred())
			files = append(files, m...)
		}
		Expect(len(files)).To(BeNumerically(">", 10))
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			if yaml.Unmarshal(data, &yaml.Node{}) == nil { // some fixtures are bad YAML on purpose
				check(f, data)
			}
		}
	})

	It("is at least the nodes YAML builds, for random documents in block, flow and JSON style", func() {
		rng := rand.New(rand.NewPCG(13, 1))
		for range 300 {
			tree := map[string]any{"root": randomTree(rng, 5)}
			block, err := yaml.Marshal(tree)
			Expect(err).NotTo(HaveOccurred())
			check("block", block)

			var n yaml.Node
			Expect(n.Encode(tree)).To(Succeed())
			flow(&n)
			flowed, err := yaml.Marshal(&n)
			Expect(err).NotTo(HaveOccurred())
			check("flow", flowed)

			js, err := json.Marshal(tree)
			Expect(err).NotTo(HaveOccurred())
			check("json", js)
		}
	})

	It("is at least the nodes of the shapes written by hand that need every indicator", func() {
		for _, doc := range []string{
			"a",                                // a root scalar: the document and its root
			"- a\n- - b\n  - c\n-\n- -",        // block items: nested, empty, and last in the file
			"{a, b, c}",                        // flow keys without values
			"[a: 1, b: 2]",                     // single pairs inside a list
			"? a\n? b\n: c\n",                  // explicit keys, one without a value
			"{\"a\":1,\"b\":[2,3]}",            // JSON: no space after the colon
			"x: &a [1, 2]\ny: *a\nz: *a\n",     // aliases
			"a:\nb:\nc:\n",                     // keys without values
			"- a: 1\n  b: 2\n- {c: 3}\n- []\n", // maps in a list
		} {
			check(doc, []byte(doc))
		}
	})
})
