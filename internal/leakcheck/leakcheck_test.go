package leakcheck_test

import (
	"io"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

// blocked is a goroutine of this module that stays until release is closed.
//
//go:noinline
func blocked(release chan struct{}) { <-release }

const blockedFunc = leakcheck.Module + "internal/leakcheck_test.blocked"

var _ = Describe("Check", func() {
	It("finds a goroutine started after the snapshot and still running, with its stack", func() {
		s := leakcheck.Take()
		release := make(chan struct{})
		defer close(release)
		go blocked(release)
		err := s.Check(50 * time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("1 goroutine(s) left running")))
		Expect(err).To(MatchError(ContainSubstring(blockedFunc + "(")))
		Expect(err).To(MatchError(ContainSubstring("leakcheck_test.go:")))
	})

	It("waits for a goroutine that is ending", func() {
		s := leakcheck.Take()
		release := make(chan struct{})
		go blocked(release)
		time.AfterFunc(50*time.Millisecond, func() { close(release) })
		Expect(s.Check(5 * time.Second)).To(Succeed())
	})

	It("excuses a goroutine blocked in an allowed function, and only that one", func() {
		s := leakcheck.Take()
		release := make(chan struct{})
		defer close(release)
		go blocked(release)
		Expect(s.Check(50*time.Millisecond, blockedFunc)).To(Succeed())
		Expect(s.Check(50*time.Millisecond, blockedFunc+"2", leakcheck.HungSimCall)).NotTo(Succeed())
	})

	It("ignores goroutines that were running at the snapshot", func() {
		release := make(chan struct{})
		defer close(release)
		go blocked(release)
		s := leakcheck.Take()
		Expect(s.Check(50 * time.Millisecond)).To(Succeed())
	})

	It("ignores goroutines that are not replaycheck's", func() {
		s := leakcheck.Take()
		// os/exec copies a stdin that is not a file on a goroutine of its own, blocked in io.
		r, w := io.Pipe()
		cmd := exec.Command("sleep", "5")
		cmd.Stdin = r
		Expect(cmd.Start()).To(Succeed())
		defer func() {
			_ = cmd.Process.Kill()
			_ = w.Close()
			_ = cmd.Wait()
		}()
		Eventually(func() []string {
			var copying []string
			for _, g := range leakcheck.Goroutines() {
				if !s[g.ID] {
					copying = append(copying, g.Funcs...)
				}
			}
			return copying
		}).Should(ContainElement("io.Copy"))
		Expect(s.Check(50 * time.Millisecond)).To(Succeed())
	})
})
