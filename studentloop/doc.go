// Package studentloop is what a student runs between reading a lesson and
// reading a solution: the checks of a stage with a short summary, the
// progress of every stage, tiered hints, a watch that reruns the checks on
// every save, the lesson in the terminal, a diff against the reference and
// a reset to the untouched scaffold. cmd/lab's status, check, watch, hint,
// docs, diff and reset subcommands are thin shells around it.
//
// It runs the stage's checks as `go test -json` in a child process and
// reads the events, so it never links the grader (nor package testing).
package studentloop

// Stages is how many stages the lab has: 0..Stages-1.
const Stages = 10
