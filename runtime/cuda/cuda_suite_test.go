package cuda_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCUDA(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "runtime/cuda")
}
