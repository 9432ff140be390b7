package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
	"idemlab/kit/auth"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage6"
	"idemlab/solutions/stage7"
	"idemlab/solutions/stage8"
)

// lastWriteWins serves settings as the untouched stage 7 scaffold does:
// a PUT writes whatever it is sent, If-Match or not, and the ETag never
// changes. It is the server that loses an update.
type lastWriteWins struct {
	stage.Handlers
	env stage.Env
}

func newLastWriteWins(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	h, err := stage6.New(ctx, env)
	return lastWriteWins{Handlers: h, env: env}, err
}

func (l lastWriteWins) GetSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _, err := l.env.Bank.AccountSettings(ctx, auth.Customer(ctx), r.PathValue("id"))
	if err != nil {
		problem.Write(w, err)
		return
	}
	w.Header().Set("ETag", `"v1"`)
	respond.JSON(w, http.StatusOK, s)
}

func (l lastWriteWins) PutSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	want, err := request.Settings(r)
	if err == nil {
		_, err = l.env.Bank.Account(ctx, auth.Customer(ctx), r.PathValue("id"))
	}
	if err == nil {
		_, err = l.env.DB.ExecContext(ctx, `UPDATE account_settings SET nickname = ?, daily_limit = ? WHERE account_id = ?`,
			want.Nickname, want.DailyLimit, r.PathValue("id"))
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	l.GetSettings(w, r)
}

// storyLabs starts a server for each factory (nil: a side not running),
// reset to the traffic's population.
func storyLabs(t *testing.T, tr *Traffic, factories ...stage.Factory) []Backend {
	t.Helper()
	labs := make([]Backend, len(factories))
	for i, f := range factories {
		if f == nil {
			continue
		}
		l := startLocal(t, f)
		if err := l.Reset(t.Context(), tr.Reset()); err != nil {
			t.Fatal(err)
		}
		labs[i] = l
	}
	return labs
}

func storyTraffic() *Traffic {
	return NewTraffic(nil, bank.Params{Seed: 7, Customers: 4, AccountsPerCustomer: 2, OpeningBalance: 10_000_000})
}

// wantTold fails unless told has outcome and each of lines among its lines.
func wantTold(t *testing.T, side string, told dashboard.Told, outcome dashboard.Outcome, lines ...string) {
	t.Helper()
	if told.Outcome != outcome {
		t.Errorf("%s: outcome %d, want %d; told %q", side, told.Outcome, outcome, told.Lines)
	}
	for _, l := range lines {
		if !slices.Contains(told.Lines, l) {
			t.Errorf("%s: told %q, want the line %q", side, told.Lines, l)
		}
	}
}

// TestClerks_TheSolutionKeepsBothChangesAndLastWriteWinsLosesOne plays
// the story on a stage 7 solution and on a server that lets the last
// save win, side by side. It catches a story that judges by stage rather
// than by the answers (both sides would read alike), one whose clerks
// send no If-Match (the solution would answer 428), one whose B does not
// read again after its 412, and one that leaves the lowered limit behind.
func TestClerks_TheSolutionKeepsBothChangesAndLastWriteWinsLosesOne(t *testing.T) {
	tr := storyTraffic()
	labs := storyLabs(t, tr, stage7.New, newLastWriteWins)
	story := tr.Clerks(t.Context(), labs)
	wantTold(t, "solution 7", story.Sides[0], dashboard.Held,
		"both clerks' changes kept", "B: 412, re-read, saved again", "₩250k over A's ₩100k limit: refused")
	wantTold(t, "last write wins", story.Sides[1], dashboard.Harmed,
		"LOST UPDATE: A's limit put back", "B's stale save: 200, taken", "₩250k over A's ₩100k limit: moved")

	c := tr.people[1] // the story's first customer
	if !strings.Contains(story.Notice, c.Accounts[0]) {
		t.Errorf("notice %q does not name the account, %s", story.Notice, c.Accounts[0])
	}
	for i, b := range labs {
		cl := clerk{t: tr, b: b, token: c.Token}
		got, _, a, ok := cl.read(t.Context(), "/accounts/"+c.Accounts[0]+"/settings")
		if !ok || got != bank.DefaultSettings() {
			t.Errorf("side %d: settings after the story %+v (%s), want them put back to %+v", i, got, answered(a), bank.DefaultSettings())
		}
	}
}

// TestClerks_AStageWithoutSettingsSaysWhichStageAddsThem: stage 6 serves
// no settings; a side not running says so.
func TestClerks_AStageWithoutSettingsSaysWhichStageAddsThem(t *testing.T) {
	tr := storyTraffic()
	story := tr.Clerks(t.Context(), storyLabs(t, tr, stage6.New, nil))
	wantTold(t, "solution 6", story.Sides[0], dashboard.Untold, "404: no settings; stage 7 adds them")
	wantTold(t, "not running", story.Sides[1], dashboard.Untold, "the server is not running")
}

// TestInvoice_Stage7PaysTwiceAndStage8RefusesTheSecond catches a story
// whose clerks share a key (stage 7 would replay, not pay twice), one
// that sends no reference (stage 8 would pay twice), and one that counts
// payments from the answers instead of the lab state.
func TestInvoice_Stage7PaysTwiceAndStage8RefusesTheSecond(t *testing.T) {
	tr := storyTraffic()
	labs := storyLabs(t, tr, stage7.New, stage8.New)
	story := tr.Invoice(t.Context(), labs)
	wantTold(t, "solution 7", story.Sides[0], dashboard.Harmed,
		"INVOICE PAID TWICE", "2nd clerk, new key: 201", "₩180k moved 2×; reference ignored")
	wantTold(t, "solution 8", story.Sides[1], dashboard.Held,
		"invoice INV-4201 paid once", "2nd clerk: 409 duplicate-reference")
	if l := story.Sides[1].Lines; len(l) != 3 || !strings.HasPrefix(l[2], "→ tr_") || !strings.HasSuffix(l[2], " (the 1st)") {
		t.Errorf("solution 8 told %q, want the original transfer named last", l)
	}
	for i, want := range []int64{2, 1} {
		st, err := labs[i].State(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Executions["s1.invoice"]; got != want {
			b, _ := json.Marshal(st.Executions)
			t.Errorf("side %d: the invoice executed %d times, want %d (%s)", i, got, want, b)
		}
	}
}

// TestDemo_PlaysTheStoryOnEachSide: the demo gives the story its own
// sides, left first, so that each outcome lands in its own pane. It
// catches a demo that plays on one side only or swaps them.
func TestDemo_PlaysTheStoryOnEachSide(t *testing.T) {
	d := NewDemo(Stages{Solutions: map[int]stage.Factory{0: stage0.New, 7: stage7.New}})
	defer d.Close()
	d.SetPaused(true)
	if err := d.Start(t.Context(), dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 7}, func(tea.Msg) {}); err != nil {
		t.Fatal(err)
	}
	story := d.Clerks(t.Context())
	wantTold(t, "stage 0 on the left", story.Sides[dashboard.Left], dashboard.Untold, "404: no settings; stage 7 adds them")
	wantTold(t, "solution 7 on the right", story.Sides[dashboard.Right], dashboard.Held, "both clerks' changes kept")
	story = d.Invoice(t.Context())
	wantTold(t, "stage 0 on the left", story.Sides[dashboard.Left], dashboard.Harmed, "INVOICE PAID TWICE")
	wantTold(t, "solution 7 on the right", story.Sides[dashboard.Right], dashboard.Harmed, "INVOICE PAID TWICE")
}

// TestDemo_CrashesAndSwitchesWaitForTheStoryUnderWay: the crashes profile
// and the c key crash the servers whenever they come, and s switches the
// right side's stage; either in the middle of a story cut it short ("the
// settings read after: no answer", or "the server is not running") and
// left clerk A's limit in place, so that the traffic after it was refused.
// Here the right server is crashed, or switched, again and again while the
// story plays; the story must still be told whole. It catches a crash or
// a switch that does not wait for the story.
func TestDemo_CrashesAndSwitchesWaitForTheStoryUnderWay(t *testing.T) {
	for name, interrupt := range map[string]func(ctx context.Context, d *Demo) error{
		"crashes":  func(ctx context.Context, d *Demo) error { return d.CrashRight(ctx) },
		"switches": func(ctx context.Context, d *Demo) error { return d.SwitchRight(ctx, dashboard.Choice{Stage: 7}) },
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDemo(Stages{Solutions: map[int]stage.Factory{0: stage0.New, 7: stage7.New}})
			defer d.Close()
			d.SetPaused(true)
			if err := d.Start(t.Context(), dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 7}, func(tea.Msg) {}); err != nil {
				t.Fatal(err)
			}
			told := make(chan dashboard.Story)
			go func() { told <- d.Clerks(t.Context()) }()
			for {
				select {
				case story := <-told:
					wantTold(t, "solution 7 under "+name, story.Sides[dashboard.Right], dashboard.Held, "both clerks' changes kept")
					return
				default:
					if err := interrupt(t.Context(), d); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
