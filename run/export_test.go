package run

import "time"

// WithWorkerGrace is c with the isolated children's grace past the instance timeout set to
// grace instead of WorkerGrace: the one door to that switch.
func WithWorkerGrace(c Config, grace time.Duration) Config {
	c.workerGrace = &grace
	return c
}
