package grader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/grader/judging"
	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
	"idemlab/kit/labclient"
	"idemlab/solutions"
)

func TestNamedOps_ReadsTheEvidenceAndTheContractBesideIt(t *testing.T) {
	f := &judging.Failure{Sent: `POST /transfers {"metadata":{"op":"op-0000000a"}}`, Got: "op op-0000000a executed twice",
		Contract: &judging.Failure{Sent: `{"metadata":{"op":"op-0000000b"}}`}}
	if ops := namedOps(f); !slices.Equal(ops, []string{"op-0000000a", "op-0000000b"}) {
		t.Errorf("namedOps = %v", ops)
	}
}

// TestResultTimeline_ACoreFindingDrawsTheTransfersItCounts: each
// transfer the finding counts (Refs) is drawn on its lane, those its text
// does not name too; the requests the story shows beside them (the first
// and the last of a load) are not lanes of the finding.
func TestResultTimeline_ACoreFindingDrawsTheTransfersItCounts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &timeline.History{}
	for i, op := range []string{"op-0000000a", "op-0000000b", "op-0000000c"} {
		id := fmt.Sprintf("a%d", i)
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		h.Attempts = append(h.Attempts, timeline.Attempt{ID: id, Client: fmt.Sprintf("client %d", i+1), Op: op, Start: at, End: at.Add(10 * time.Millisecond), Status: 201})
		h.Events = append(h.Events, timeline.Event{At: at.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: id, Op: op, Ref: fmt.Sprintf("tr_%d", i)})
	}
	sent := "POST /transfers {\"metadata\":{\"op\":\"op-0000000a\"}}  →  201\n…\nPOST /transfers {\"metadata\":{\"op\":\"op-0000000c\"}}  →  201"
	r := Result{Check: Check{ID: "S9.x"}, History: h, Err: &judging.Failure{Harm: judging.NotPosted, Sent: sent,
		Got: "1 posting in the core ledger\nnever posted: tr_1, tr_2", Refs: []string{"tr_1"}}}
	clientLanes := func() []string {
		v, ok := r.Timeline("make stage-9", 10)
		if !ok {
			t.Fatal("a transfer never posted draws no timeline")
		}
		var lanes []string
		for _, l := range v.Lanes {
			if !l.Lab {
				lanes = append(lanes, l.Label)
			}
		}
		return lanes
	}
	if lanes := clientLanes(); !slices.Equal(lanes, []string{"client 2"}) {
		t.Errorf("lanes %v; want the lane of the transfer the finding counts alone (client 2)", lanes)
	}
	r.Err.(*judging.Failure).Refs = []string{"tr_1", "tr_2"}
	if lanes := clientLanes(); !slices.Equal(lanes, []string{"client 2", "client 3"}) {
		t.Errorf("lanes %v; want the lanes of every transfer the finding counts (clients 2 and 3)", lanes)
	}
}

// TestResultTimeline_HarmDecidesTheHighlight: money that moved for a
// refused request highlights its execution even when the check judged it
// itself (no Excess); a contract difference of one request draws nothing.
func TestResultTimeline_HarmDecidesTheHighlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &timeline.History{
		Attempts: []timeline.Attempt{{ID: "a1", Client: "check", Op: "op-0000000a", Start: t0, End: t0.Add(10 * time.Millisecond), Status: 400}},
		Events:   []timeline.Event{{At: t0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0000000a"}},
	}
	sent := `POST /transfers {"metadata":{"op":"op-0000000a"}}`
	moved := Result{Check: Check{ID: "S1.x"}, History: h, Err: &judging.Failure{Harm: judging.MovedThoughRefused, Sent: sent}}
	v, ok := moved.Timeline("make stage-1", 10)
	if !ok || len(v.Lanes) != 1 || len(v.Lanes[0].Marks) != 1 || !v.Lanes[0].Marks[0].Highlight {
		t.Errorf("moved though refused: drawn %v, lanes %+v; want its execution highlighted", ok, v.Lanes)
	}
	contract := Result{Check: Check{ID: "S1.x"}, History: h, Err: &judging.Failure{Sent: sent}}
	if _, ok := contract.Timeline("make stage-1", 10); ok {
		t.Error("a contract difference of one request draws a timeline")
	}
}

// TestHighlight_KnowsEveryHarmAndEveryFindingKind holds the timeline's
// names to judging's harms and to the day replay's finding kinds: each is
// one the timeline knows, and a harm and the kind results.json counts it
// under are drawn alike. It catches a harm or a kind added, or renamed, on
// one side only (its marks would be drawn as merely named by the
// evidence), and a harm drawn one way by lab check and another by lab
// replay --op.
func TestHighlight_KnowsEveryHarmAndEveryFindingKind(t *testing.T) {
	for _, k := range replay.FindingKinds {
		if _, ok := timeline.HighlightOf(k); !ok {
			t.Errorf("the timeline does not know the replay's finding kind %q", k)
		}
	}
	var c Counts
	names := countNames(&c)
	paired := 0
	for _, h := range declaredHarms(t) {
		drawn, ok := timeline.HighlightOf(string(h))
		if !ok {
			t.Errorf("the timeline does not know the harm %q", h)
			continue
		}
		kind := names[c.of(h)]
		if !slices.Contains(replay.FindingKinds, kind) {
			continue // a harm the replay cannot see (a leak, money moved though refused)
		}
		paired++
		if k, _ := timeline.HighlightOf(kind); k != drawn {
			t.Errorf("the harm %q is drawn %c (%s), the replay's %q %c (%s)", h, drawn.Glyph, drawn.Legend, kind, k.Glyph, k.Legend)
		}
	}
	if paired < 10 {
		t.Errorf("only %d harms have a finding kind of the replay under the same count", paired)
	}
}

// countNames maps each field of c, by its address, to its name in
// results.json.
func countNames(c *Counts) map[*int]string {
	v := reflect.ValueOf(c).Elem()
	names := map[*int]string{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		names[v.Field(i).Addr().Interface().(*int)] = name
	}
	return names
}

// TestWriteTimeline_ARunWithNothingToDrawRemovesTheLastRunsPage: a check
// that failed on money leaves its page in the folder; when it passes
// next, or could not run, the page goes, so a student who opens the folder
// never reads a failure that is gone. Another check's page stays.
func TestWriteTimeline_ARunWithNothingToDrawRemovesTheLastRunsPage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &timeline.History{
		Attempts: []timeline.Attempt{{ID: "a1", Client: "check", Op: "op-0000000a", Start: t0, End: t0.Add(10 * time.Millisecond), Status: 400}},
		Events:   []timeline.Event{{At: t0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0000000a"}},
	}
	failed := func(id string) Result {
		return Result{Check: Check{ID: id}, History: h, Err: &judging.Failure{Harm: judging.MovedThoughRefused,
			Sent: `POST /transfers {"metadata":{"op":"op-0000000a"}}`}}
	}
	dir := t.TempDir()
	page := func(id string) bool {
		_, err := os.Stat(filepath.Join(dir, id+".html"))
		return err == nil
	}
	for _, id := range []string{"S1.x", "S1.y"} {
		r := failed(id)
		if err := WriteTimeline(&r, dir, "make stage-1"); err != nil {
			t.Fatal(err)
		}
		if r.TimelinePath == "" || !page(id) {
			t.Fatalf("%s failed on money: no page written (path %q)", id, r.TimelinePath)
		}
	}
	for _, r := range []Result{
		{Check: Check{ID: "S1.x"}, History: h},
		{Check: Check{ID: "S1.x"}, Err: errors.New("could not run")},
	} {
		if err := WriteTimeline(&r, dir, "make stage-1"); err != nil {
			t.Fatal(err)
		}
		if page("S1.x") {
			t.Errorf("S1.x then ended %v: the earlier run's page is still there", r.Err)
		}
		if r.TimelinePath != "" {
			t.Errorf("S1.x ended %v: TimelinePath %q", r.Err, r.TimelinePath)
		}
	}
	if !page("S1.y") {
		t.Error("S1.y's page went when S1.x passed")
	}
}

// TestOn_TheHistoryHearsEveryServerProcess: a check that runs the server
// as two processes on one database sends a payment through each, and the
// history holds both executions, each naming the process it ran in, and
// each key claimed and completed. A history that heard the first process
// alone drew one execution where a double in such a round
// (S6.late-original-fenced's last rounds) made two, and none of the
// second process's key changes on SQLite.
func TestOn_TheHistoryHearsEveryServerProcess(t *testing.T) {
	subject := Subject{Stage: 6, Name: "solutions/stage6", New: solutions.ByStage[6]}
	var ops, keys []string
	c := Check{ID: "S6.two-processes-heard", Stage: 6, Run: func(t *T) error {
		rt, s, err := t.twoServers(1_000_000)
		if err != nil {
			return err
		}
		for replica := range 2 {
			req, op, _ := s.Payment(rt)
			req.Replica = replica
			ops, keys = append(ops, op), append(keys, req.Key)
			if r := rt.Do(req); r.Status != http.StatusCreated {
				return fmt.Errorf("the payment through process %d: %s", replica+1, r.Short())
			}
		}
		return nil
	}}
	r := RunCheckRecorded(context.Background(), subject, c, 1, targets.InProcess)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	got, marks := map[string]int{}, map[string]bool{}
	for _, e := range r.History.Events {
		switch e.Kind {
		case timeline.Execution:
			got[e.Op] = e.Process
		case timeline.Claim, timeline.Complete:
			marks[e.Kind+" "+e.Key] = true
		}
	}
	if want := map[string]int{ops[0]: 1, ops[1]: 2}; !maps.Equal(got, want) {
		t.Errorf("executions (op → process) %v, want %v", got, want)
	}
	for _, k := range keys {
		for _, kind := range []string{timeline.Claim, timeline.Complete} {
			if !marks[kind+" "+k] {
				t.Errorf("no %s of key %s, sent through process %d", kind, k, slices.Index(keys, k)+1)
			}
		}
	}
}

// TestOn_ATakeoverIsDrawnOnItsKeysLane: an original dies inside its
// business write, leaving its key in progress, and once its lease has run
// out a retry takes the key over. The key table says in progress before
// and after; only the row's lease owner changes. The history holds the
// takeover as an event of its own, between the claim and the retry's
// release, and the timeline of a finding about the payment draws it on
// the key's lane and names it in the legend, on the terminal and on the
// page. A history that read the key rows' states alone drew the retry's
// takeover as nothing at all.
func TestOn_ATakeoverIsDrawnOnItsKeysLane(t *testing.T) {
	subject := Subject{Stage: 6, Name: "solutions/stage6", New: solutions.ByStage[6]}
	var op, key string
	c := Check{ID: "S6.takeover-drawn", Stage: 6, Run: withScenario(1_000_000, func(t *T, s Scenario) error {
		const lease = 5 * time.Second
		if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
			return err
		}
		var req Request
		req, op, _ = s.Payment(t)
		key = req.Key
		if _, err := t.strand(req); err != nil {
			return err
		}
		owner := func() (string, error) {
			st, err := t.State()
			if err != nil {
				return "", err
			}
			for _, row := range judging.KeyRows(st, key) {
				o, _ := row["lease_owner"].(string)
				return o, nil
			}
			return "", nil
		}
		stranded, err := owner()
		if err != nil {
			return err
		}
		// The retry waits on the core until it is abandoned: its takeover
		// is heard while the key is still in progress.
		if err := t.Configure(labclient.Config{Lease: lease, CoreLatency: time.Minute}); err != nil {
			return err
		}
		if err := t.Advance(lease + time.Second); err != nil {
			return err
		}
		retry, abandon := t.launchAbandoned(req)
		took, err := t.WaitFor(30*time.Second, func() (bool, error) {
			o, err := owner()
			return o != "" && o != stranded, err
		})
		if err != nil || !took {
			abandon()
			return fmt.Errorf("the retry did not take the key over (%v)", err)
		}
		t.history.Fence(t.ctx)
		abandon()
		retry.Wait()
		return nil
	})}
	r := RunCheckRecorded(context.Background(), subject, c, 1, targets.InProcess)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var kinds []string
	for _, e := range r.History.Events {
		if e.Key == key {
			kinds = append(kinds, e.Kind)
		}
	}
	if want := []string{timeline.Claim, timeline.Takeover}; len(kinds) < 2 || !slices.Equal(kinds[:2], want) {
		t.Fatalf("the key's events %v, want a claim, then a takeover", kinds)
	}
	v, ok := r.History.Focus(timeline.Finding{Check: c.ID, Harm: "stuck key", Named: []string{op}}, timeline.TextLanes)
	if !ok {
		t.Fatal("no view of the payment")
	}
	var lane *timeline.Lane
	for i, l := range v.Lanes {
		if l.Label == "key "+key {
			lane = &v.Lanes[i]
		}
	}
	if lane == nil || !slices.ContainsFunc(lane.Marks, func(m timeline.Mark) bool { return m.Kind == timeline.Takeover }) {
		t.Fatalf("the key's lane %+v holds no takeover", lane)
	}
	if text := timeline.Text(v, timeline.TextOptions{}); !strings.Contains(text, "o key taken over") {
		t.Errorf("the terminal timeline does not name the takeover:\n%s", text)
	}
	var page strings.Builder
	if err := timeline.HTML(&page, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<span>o key taken over") || !strings.Contains(page.String(), "key taken over: a retry wrote itself in") {
		t.Errorf("the page neither draws nor names the takeover:\n%s", page.String())
	}
}

// TestWriteTimeline_SaysTheLesserFindingADoubleLeads: where a double the
// books showed leads the check's own money finding (a wrong answer), the
// report says both, each with its evidence, and so does the page: its
// reader is not left with the double's evidence alone.
func TestWriteTimeline_SaysTheLesserFindingADoubleLeads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &timeline.History{}
	for i := range 2 {
		id := fmt.Sprintf("a%d", i)
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		h.Attempts = append(h.Attempts, timeline.Attempt{ID: id, Client: "check", Op: "op-0000000a", Start: at, End: at.Add(10 * time.Millisecond), Status: 201})
		h.Events = append(h.Events, timeline.Event{At: at.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: id, Op: "op-0000000a"})
	}
	lesser := &judging.Failure{Harm: judging.WrongAnswer, Sent: `POST /transfers {"metadata":{"op":"op-0000000a"}}`,
		Got: "201 naming tr_other, another operation's transfer"}
	r := Result{Check: Check{ID: "S4.x"}, History: h, Err: &judging.Failure{Harm: judging.Double,
		Got: "/lab/state: op op-0000000a executed twice", Excess: []string{"op-0000000a"}, Lesser: lesser}}
	report := Format(r, "make stage-4")
	dir := t.TempDir()
	if err := WriteTimeline(&r, dir, "make stage-4"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "S4.x.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"also " + string(judging.WrongAnswer), "tr_other, another operation"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("the page does not say %q, which the report says", want)
		}
	}
}
