package dl_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDL(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "runtime/internal/dl")
}
