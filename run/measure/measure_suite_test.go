package measure_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

func TestMeasure(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "measure")
}
