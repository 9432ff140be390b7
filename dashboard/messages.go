package dashboard

import (
	"context"
	"fmt"
	"time"

	"idemlab/kit/events"
	"idemlab/kit/labctl"
)

// The sides of the demo.
const (
	Left  = 0
	Right = 1
)

// EventsMsg carries a batch of one side's events.
type EventsMsg struct {
	Side  int
	Epoch int // which server of that side sent them (see SideMsg)
	// Received is when the batch was taken off the stream.
	Received time.Time
	Events   []events.Event
}

// StateMsg carries a state poll of one side, which started at Polled.
type StateMsg struct {
	Side   int
	Epoch  int
	Polled time.Time
	State  labctl.State
	Err    error
}

// SideMsg says what a side now shows. A new Epoch means a new server
// (another stage): its counts start again.
type SideMsg struct {
	Side   int
	Epoch  int
	Title  string
	URL    string
	Status string
	// Note, if set, is a line for the side's feed: what happened to the
	// server (a crash says which kind).
	Note string
}

// NoticeMsg is a line for the status bar.
type NoticeMsg struct {
	Text string
	Err  bool
}

// FatalMsg ends the program with an error (a server could not start).
type FatalMsg struct{ Err error }

// Choice is the code a side runs: a stage's reference solution, or the
// student's own code in stages/stageN.
type Choice struct {
	Stage int
	Yours bool
}

// String names the choice as the pane's title shows it.
func (c Choice) String() string {
	if c.Yours {
		return fmt.Sprintf("stage %d · your code", c.Stage)
	}
	if c.Stage == 0 {
		return "stage 0 · naive"
	}
	return fmt.Sprintf("stage %d · solution", c.Stage)
}

// Profile is what the screen shows of a fault profile: its name and one
// line on what goes wrong. What the profile does lives with the traffic
// (dashboard/backend).
type Profile struct {
	Name  string
	About string
}

// TrafficControls are what the demo's traffic keys do: pause it, change
// its rate and its faults. A model given none only watches (lab dash).
// Each may block (it does I/O), so the model calls them from commands,
// never from Update; so do the optional controls below, which the model
// finds by type assertion on the same value, as net/http finds a Flusher.
type TrafficControls interface {
	SetPaused(bool)
	// StepRate moves the traffic rate one step up (+1) or down (-1) and
	// returns it in operations per second.
	StepRate(delta int) int
	NextProfile(ctx context.Context) Profile
}

// PaceReporter is traffic that holds operations back while the servers
// answer too slowly for the rate (see backend.Traffic.HeldBack): the fault
// line says so while it does.
type PaceReporter interface {
	// HeldBack is how many operations were not started, so far.
	HeldBack() int64
}

// StoryControls play the one-shot stories on both sides. Without them the
// story keys are off and out of the help.
type StoryControls interface {
	// Burst and Edited send their operations and return a notice.
	Burst(ctx context.Context) string
	Edited(ctx context.Context) string
	// Clerks and Invoice play a story on both sides and return what each
	// side's server did (see Story).
	Clerks(ctx context.Context) Story
	Invoice(ctx context.Context) Story
}

// RightControls change the right side's server. Without them the crash,
// stage and yours keys are off and out of the help.
type RightControls interface {
	CrashRight(ctx context.Context) error
	// SwitchRight runs c on the right; an error says why it cannot.
	SwitchRight(ctx context.Context, c Choice) error
}

// Story is what a one-shot story played on both sides found: a notice for
// the status bar, and each side's outcome, drawn from what its server
// answered and what its lab state showed.
type Story struct {
	Notice string
	Sides  [2]Told
}

// Told is what a story found on one side, in a few short lines, the first
// the verdict.
type Told struct {
	Outcome Outcome
	Lines   []string
}

// Outcome is a story's verdict on one side.
type Outcome int

// The outcomes.
const (
	// Untold: the server does not serve what the story needs (an older
	// stage), or it could not be asked.
	Untold Outcome = iota
	// Held: the server kept every change and moved money once.
	Held
	// Harmed: a change was lost, or money moved that should not have.
	Harmed
)

// KindStream is an event no server sends: a reader of several replicas'
// streams (backend.Remote) puts it among their events when one replica's
// GET /lab/events breaks (Stream.Open false: the process exited, or the
// network failed) and when it opens again. The server says nothing of a
// process of its own that dies; its stream ending is how the dashboard
// learns of it, as lab serve learns of it from the process's exit.
const KindStream = "stream"

// Stream is the data of a KindStream event.
type Stream struct {
	Open bool `json:"open"`
}
