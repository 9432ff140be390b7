package backend

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"idemlab/dashboard"
	"idemlab/grader/dayplan"
)

// Profile is a fault profile: what the network, the people and the
// machines do to the demo's traffic. Both servers get the same.
type Profile struct {
	// Profile is what the screen shows: the name and one line.
	dashboard.Profile
	// FaultRate is the share of operations whose first attempts meet
	// failure points, drawn from Points.
	FaultRate float64
	Points    []dayplan.Point
	// DoubleClickRate and EditRate are the shares of operations that are
	// double-clicked and that a clerk resubmits with an edited amount.
	DoubleClickRate float64
	EditRate        float64
	// CoreLatency is how long every business operation waits on the core.
	CoreLatency time.Duration
	// CrashEvery, when set, crashes and restarts both servers that often.
	CrashEvery time.Duration
}

// lostPoints are the failure points where the server ran the request and
// the client never heard: the ones that move money twice.
var lostPoints = []dayplan.Point{dayplan.ResetAfterProcessing, dayplan.ResponseWithheld}

// Profiles are the fault profiles the demo cycles through, the default first.
var Profiles = []Profile{
	{
		Profile:   dashboard.Profile{Name: "lost responses", About: "1 in 4 answers lost; the client retries"},
		FaultRate: 0.25, Points: lostPoints, DoubleClickRate: 0.03, EditRate: 0.02,
	},
	{
		Profile:         dashboard.Profile{Name: "double-clicks", About: "1 in 4 sent twice at once; core 150ms"},
		DoubleClickRate: 0.25, CoreLatency: 150 * time.Millisecond,
	},
	{
		Profile:   dashboard.Profile{Name: "flaky network", About: "all seven failure points of a remote call"},
		FaultRate: 0.35, Points: dayplan.Points, DoubleClickRate: 0.03, EditRate: 0.02,
	},
	{
		Profile:  dashboard.Profile{Name: "clerks", About: "1 in 5 resent: same key, amount edited"},
		EditRate: 0.2,
	},
	{
		Profile:     dashboard.Profile{Name: "crashes", About: "both servers crash every 5s"},
		CoreLatency: 100 * time.Millisecond, CrashEvery: 5 * time.Second,
	},
	{
		Profile: dashboard.Profile{Name: "calm", About: "nothing goes wrong"},
	},
}

// ProfileNamed finds a profile by name; it returns its index, or an error
// listing the names.
func ProfileNamed(name string) (int, error) {
	var names []string
	for i, p := range Profiles {
		if p.Name == name {
			return i, nil
		}
		names = append(names, strconv.Quote(p.Name))
	}
	return 0, fmt.Errorf("no fault profile %q; the profiles are %s", name, strings.Join(names, ", "))
}
