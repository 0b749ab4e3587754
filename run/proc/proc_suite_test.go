package proc_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

func TestProc(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "proc")
}
