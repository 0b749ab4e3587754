package enum_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/enum"
)

type color uint8

const (
	red color = iota + 1
	green
	blue
)

var colors = enum.New("color", "colour",
	enum.Name(red, "red"),
	enum.Name(green, "green"),
	enum.Name(blue, "blue"),
)

var _ = Describe("Names", func() {
	It("names the values it lists and numbers the others", func() {
		Expect(colors.String(green)).To(Equal("green"))
		Expect(colors.String(0)).To(Equal("colour(0)"))
		Expect(colors.String(9)).To(Equal("colour(9)"))
	})

	It("parses every name String returns, and only those", func() {
		for _, v := range colors.Values() {
			Expect(colors.Parse(colors.String(v))).To(Equal(v))
		}
		_, err := colors.Parse("RED")
		Expect(err).To(MatchError(`unknown color "RED" (want red, green or blue)`))
	})

	It("lists the alternatives as English does", func() {
		two := enum.New("pair", "pair", enum.Name(1, "a"), enum.Name(2, "b"))
		_, err := two.Parse("c")
		Expect(err).To(MatchError(`unknown pair "c" (want a or b)`))
		one := enum.New("single", "single", enum.Name(1, "a"))
		_, err = one.Parse("c")
		Expect(err).To(MatchError(`unknown single "c" (want a)`))
	})

	It("hands out copies of its values", func() {
		colors.Values()[0] = blue
		Expect(colors.Values()).To(Equal([]color{red, green, blue}))
		Expect(colors.Valid(red)).To(BeTrue())
		Expect(colors.Valid(0)).To(BeFalse())
	})
})
