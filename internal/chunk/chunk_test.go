package chunk_test

import (
	"slices"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/chunk"
)

func TestChunk(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "chunk")
}

func values(l *chunk.Log[int]) []int {
	out := []int{}
	for b := range l.Blocks() {
		out = append(out, b...)
	}
	return out
}

var _ = Describe("a log in blocks", func() {
	DescribeTable("keeps every value in order, in blocks no larger than Block, the first no larger than the hint",
		func(hint, n int) {
			l := chunk.Log[int]{Hint: hint}
			for i := range n {
				l.Add(i)
			}
			Expect(l.Len()).To(Equal(n))
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			Expect(values(&l)).To(Equal(want))
			var blocks [][]int
			for b := range l.Blocks() {
				blocks = append(blocks, b)
			}
			for i, b := range blocks {
				Expect(cap(b)).To(BeNumerically("<=", chunk.Block))
				if i == 0 && hint > 0 {
					Expect(cap(b)).To(BeNumerically("<=", hint))
				}
				if i < len(blocks)-1 {
					Expect(b).To(HaveLen(cap(b)), "only the last block has room")
				}
			}
		},
		Entry("empty", 0, 0),
		Entry("a few, no hint", 0, 5),
		Entry("as many as hinted", 3, 3),
		Entry("more than hinted", 3, 100),
		Entry("100,000, hinted", 100000, 100000),
		Entry("100,000, no hint", 0, 100000),
		Entry("one past a block", chunk.Block+1, chunk.Block+1),
	)

	It("never moves a value once added: the pointer Add returns stays valid", func() {
		var l chunk.Log[int]
		first := l.Add(7)
		for i := range chunk.Block * 3 {
			l.Add(i)
		}
		Expect(*first).To(Equal(7))
		*first = 8
		Expect(values(&l)[0]).To(Equal(8))
	})

	It("is, copied, a view of what it held then", func() {
		var l chunk.Log[int]
		for i := range 10 {
			l.Add(i)
		}
		view := l
		for i := 10; i < chunk.Block*2; i++ {
			l.Add(i)
		}
		Expect(view.Len()).To(Equal(10))
		Expect(values(&view)).To(Equal([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))
		Expect(slices.Equal(values(&l)[:10], values(&view))).To(BeTrue())
	})

	It("keeps shared values in order among added ones, without copying them", func() {
		var l chunk.Log[int]
		l.Add(1)
		shared := []int{2, 3, 4}
		l.Share(shared[:2])
		l.Share(nil)
		l.Add(5)
		Expect(values(&l)).To(Equal([]int{1, 2, 3, 5}))
		Expect(l.Len()).To(Equal(4))
		shared[0] = 9 // the log holds the caller's values, not a copy
		Expect(values(&l)).To(Equal([]int{1, 9, 3, 5}))
		Expect(shared[2]).To(Equal(4), "adding after a shared block never writes into it")
	})
})
