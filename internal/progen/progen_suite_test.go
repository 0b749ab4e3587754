package progen_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestProgen(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "progen")
}
