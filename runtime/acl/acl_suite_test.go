package acl_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestACL(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "runtime/acl")
}
