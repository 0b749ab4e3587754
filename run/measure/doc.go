// Package measure settles a platform profile's unmeasured rules on a device: it runs the
// measurement probes (specs/measure/probes), reads the platform's answer at the step each
// measurement names, and compares it with what the rule of the simulator's profile says.
//
// # The table
//
// Which rule a probe decides is data, in a table beside the probes (specs/measure/rules.yaml,
// LoadTable): each measurement names a profile (cann, cuda), a rule by its situation (the rule's
// name in the profile, device/sim.Rule.Situation), a probe (set/name), the step whose call the
// rule answers (probes.ParseStep's text), optionally the capture modes whose instances it reads,
// and what an answer other than the rule's means. A measurement that no probe can make yet says why
// in blocked instead of probe and step. The probe language is not extended: a probe stays an
// ordinary probe, runnable and checkable with `replaycheck run` and `validate`.
//
// Table.Resolve checks a table against the profiles and the probes: every rule named once in its
// profile, every probe loaded, every step one the probe makes, every mode one the probe runs in
// and the rule applies to. Uncovered lists a profile's verify rules that no measurement names.
//
// # The comparison
//
// What the profile says (Says) is the rule's answer: allowed, or its code and whether it
// invalidates the capture. What the device did (Observe) is the step's: the platform's rejection
// at that step when the result records one there (an asynchronous fault of a launch is charged to
// the launch's step), else the call's own event in the timeline (no error: allowed); and, for a
// call inside a capture, whether that capture's end answered capture-invalidated. They agree when
// both allow, or both reject with the same code and invalidation (Answer.Agrees). An instance that
// ended in error, or that never made the step's call, is inconclusive: it decides nothing.
//
// Run opens the configured backend (package run), picks the measurements of the device's
// platform family (probes.Family), runs their probes' unguarded instances through run.Execute
// and returns a Report: one Row per measurement and instance read, and one per blocked
// measurement. WriteText and WriteJSON render it; Report.Failed says whether any row disagreed
// or was inconclusive.
package measure
