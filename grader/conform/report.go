package conform

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Summary counts a run's results.
type Summary struct {
	// MustMet of Must scenarios met the draft's MUST, ShouldMet of Should
	// its SHOULD; Must and Should count the scenarios not tried too, which
	// are never met. MustUnmet counts those tried that missed it, and
	// MustUnobserved those tried whose requests the MUST is about got no
	// answer at all: neither met nor missed, and the verdict unknown. A
	// scenario's second requirement (Result.Also) counts at its own level.
	MustMet        int `json:"must_met"`
	Must           int `json:"must"`
	MustUnmet      int `json:"must_unmet"`
	MustUnobserved int `json:"must_unobserved"`
	ShouldMet      int `json:"should_met"`
	Should         int `json:"should"`
	// Money is MoneyHarmed if any scenario harmed money, else
	// MoneyUnobserved if any could not observe it, else MoneyClean: what
	// the scenarios tried showed.
	Money string `json:"money"`
	// NotTried counts the scenarios not tried; Undecided those of them
	// whose verdict the run's needs: a MUST, or one of the course's money
	// scenarios (retry-after-restart aside: a black box restarts only
	// with the profile's command, as it crashes only never).
	NotTried  int `json:"not_tried"`
	Undecided int `json:"undecided"`
}

// Summarize counts results.
func Summarize(results []Result) Summary {
	s := Summary{Money: MoneyClean}
	for _, r := range results {
		s.count(r.Level, r.Contract)
		if r.Also != nil {
			s.count(r.Also.Level, r.Also.Contract)
		}
		if r.NotTried != "" {
			s.NotTried++
			if decides(r) {
				s.Undecided++
			}
			continue
		}
		switch {
		case r.Money == MoneyHarmed:
			s.Money = MoneyHarmed
		case r.Money == MoneyUnobserved && s.Money == MoneyClean:
			s.Money = MoneyUnobserved
		}
	}
	return s
}

// count counts one requirement of the draft at level, its verdict
// contract.
func (s *Summary) count(level, contract string) {
	switch level {
	case "MUST":
		s.Must++
		switch contract {
		case ContractMet:
			s.MustMet++
		case ContractUnmet:
			s.MustUnmet++
		case ContractUnobserved:
			s.MustUnobserved++
		}
	case "SHOULD":
		s.Should++
		if contract == ContractMet {
			s.ShouldMet++
		}
	}
}

// decides reports whether the run's verdict needs r's: a MUST of the
// draft, or a money scenario of the course's own. A SHOULD missed does
// not fail a run, so one not tried leaves it no less known; nor does
// retry-after-restart without the profile's restart, which a black box
// cannot try, like a crash inside a request (docs/conform.md).
func decides(r Result) bool {
	if r.Level == "SHOULD" {
		return false
	}
	for _, s := range scenarios {
		if s.ID == r.ID {
			return !s.Restart
		}
	}
	return true
}

// Valid is false when money was harmed or a MUST tried was missed; else
// nil when the run cannot say (money not observed, a MUST not observed,
// or a MUST or money scenario not tried: unknown, never met); else true.
func (s Summary) Valid() *bool {
	v := s.Money != MoneyHarmed && s.MustUnmet == 0
	if v && (s.Money == MoneyUnobserved || s.MustUnobserved > 0 || s.Undecided > 0) {
		return nil
	}
	return &v
}

// Line is the one-line summary: "3/3 MUST met, 2/4 SHOULD met, money
// clean", then how many scenarios were not tried and, if that leaves the
// verdict unknown, so.
func (s Summary) Line() string {
	money := "money " + s.Money
	if s.Money == MoneyUnobserved {
		money = "money not observed"
	}
	line := fmt.Sprintf("%d/%d MUST met, %d/%d SHOULD met, %s", s.MustMet, s.Must, s.ShouldMet, s.Should, money)
	if s.MustUnobserved > 0 {
		line = fmt.Sprintf("%d/%d MUST met (%d not observed: the verdict is unknown), %d/%d SHOULD met, %s", s.MustMet, s.Must, s.MustUnobserved, s.ShouldMet, s.Should, money)
	}
	if s.NotTried > 0 {
		line += fmt.Sprintf(", %d not tried", s.NotTried)
		if s.Undecided > 0 && s.Valid() == nil {
			line += fmt.Sprintf(" (%d of them a MUST or money scenario: the verdict is unknown)", s.Undecided)
		}
	}
	return line
}

// WriteHuman writes the report for a person: money first, then the
// draft's requirements, then what was not tried, then the summary line.
func WriteHuman(w io.Writer, name string, results []Result) {
	fmt.Fprintln(w, "money: read from the witness, never from a status or header")
	for _, r := range results {
		if r.NotTried != "" {
			continue
		}
		mark := map[string]string{MoneyClean: "✓ clean ", MoneyHarmed: "✗ HARMED", MoneyUnobserved: "? could not observe"}[r.Money]
		fmt.Fprintf(w, "  %s  %s: %s\n", mark, r.ID, r.ClaimMoney)
		if r.Money != MoneyClean {
			writeDetail(w, r)
		} else {
			fmt.Fprintf(w, "      saw       %s\n", r.Saw)
		}
	}
	fmt.Fprintf(w, "contract: %s\n", Draft)
	for _, r := range results {
		if r.NotTried != "" || r.Contract == "" {
			continue
		}
		cite := fmt.Sprintf("%-6s §%s", r.Level, r.Section)
		if r.Level == "" {
			cite = "answer" // a contract of the course's own: the client's answer
		}
		fmt.Fprintf(w, "  %s %s  %s: %s\n", contractMark(r.Contract), cite, r.ID, r.ClaimContract)
		if r.Contract != ContractMet {
			writeDetail(w, r)
		} else if r.Note != "" {
			fmt.Fprintf(w, "      %-9s %s\n", "but", r.Note)
		}
		if a := r.Also; a != nil && a.Contract != "" {
			fmt.Fprintf(w, "  %s %-6s §%s  %s: %s\n", contractMark(a.Contract), a.Level, a.Section, r.ID, a.Claim)
			if a.Contract != ContractMet {
				also := r
				also.Expected = a.Expected
				writeDetail(w, also)
			}
		}
	}
	var skipped []Result
	for _, r := range results {
		if r.NotTried != "" {
			skipped = append(skipped, r)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "not tried")
		for _, r := range skipped {
			unknown := ""
			if decides(r) {
				unknown = ": unknown, and so is the run's verdict"
			}
			fmt.Fprintf(w, "  - %s%s: %s%s\n", r.ID, cited(r), r.NotTried, unknown)
		}
	}
	fmt.Fprintf(w, "conform: %s: %s\n", name, Summarize(results).Line())
}

// contractMark is the report's mark for a contract verdict.
func contractMark(contract string) string {
	switch contract {
	case ContractMet:
		return "✓"
	case ContractUnobserved:
		return "?"
	}
	return "✗"
}

// unmet says which requirement r missed: the draft's, with its level,
// or one of the course's own.
func unmet(r Result) string {
	if r.Level == "" {
		return "the answer unmet: " + r.ClaimContract
	}
	return fmt.Sprintf("%s §%s unmet: %s", r.Level, r.Section, r.ClaimContract)
}

// cited is r's citation of the draft, " (MUST §2.6)", or "" for a money
// scenario of the course's own.
func cited(r Result) string {
	if r.Level == "" {
		return ""
	}
	return fmt.Sprintf(" (%s §%s)", r.Level, r.Section)
}

func writeDetail(w io.Writer, r Result) {
	for _, l := range [][2]string{{"sent", r.Sent}, {"got", r.Got}, {"expected", r.Expected}, {"saw", r.Saw}, {"but", r.Note}} {
		if l[1] != "" {
			fmt.Fprintf(w, "      %-9s %s\n", l[0], l[1])
		}
	}
}

// jsonReport is the --json document.
type jsonReport struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Seed    uint64   `json:"seed"`
	Draft   string   `json:"draft"`
	Valid   *bool    `json:"valid"`
	Summary Summary  `json:"summary"`
	Results []Result `json:"results"`
	// Error says why the run could not be made; valid is then null.
	Error string `json:"error,omitempty"`
}

// WriteJSON writes the run as one JSON document; "valid" is true, false
// or null (could not observe), as Summary.Valid says.
func WriteJSON(w io.Writer, name, url string, seed uint64, results []Result) error {
	s := Summarize(results)
	return writeJSON(w, jsonReport{Name: name, URL: url, Seed: seed, Draft: Draft, Valid: s.Valid(), Summary: s, Results: results})
}

// WriteJSONCouldNotRun writes a run that could not be made, stopped by
// runErr after results (none if it stopped before sending anything, or
// before its profile was read, name then ""): "valid" null and "error"
// the reason. The summary's money is harmed if a scenario run harmed it,
// else not observed: the run's money was never all seen, and a run that
// saw none of it is not clean.
func WriteJSONCouldNotRun(w io.Writer, name, url string, seed uint64, results []Result, runErr error) error {
	s := Summarize(results)
	if s.Money == MoneyClean {
		s.Money = MoneyUnobserved
	}
	return writeJSON(w, jsonReport{Name: name, URL: url, Seed: seed, Draft: Draft, Summary: s, Results: results, Error: runErr.Error()})
}

func writeJSON(w io.Writer, doc jsonReport) error {
	if doc.Results == nil {
		doc.Results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Class   string        `xml:"classname,attr"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
	Skipped *junitMessage `xml:"skipped"`
	// Output holds a passing case's note: what the run could not see.
	Output string `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the run as a JUnit XML test suite, a test case per
// scenario: one that harmed money or missed a requirement of the draft
// fails (the message names the level, MUST or SHOULD); one whose verdict
// the run needs but does not have (a MUST or money scenario not tried,
// money not observed) is an error, as the run's exit status 2 is; one
// not tried that the verdict does not need is skipped.
func WriteJUnit(w io.Writer, name string, results []Result) error {
	return writeJUnit(w, name, results, nil)
}

// WriteJUnitCouldNotRun writes a run that could not be made, stopped by
// runErr after results, as WriteJUnit does, with one more test case, an
// error that gives the reason.
func WriteJUnitCouldNotRun(w io.Writer, name string, results []Result, runErr error) error {
	return writeJUnit(w, name, results, runErr)
}

func writeJUnit(w io.Writer, name string, results []Result, runErr error) error {
	suite := junitSuite{Name: "lab conform", Tests: len(results)}
	if name != "" {
		suite.Name += ": " + name
	}
	if runErr != nil {
		suite.Tests++
		suite.Errors++
		suite.Cases = append(suite.Cases, junitCase{Name: "run", Class: "conform", Error: &junitMessage{Message: "could not run: " + runErr.Error()}})
	}
	for _, r := range results {
		c := junitCase{Name: r.ID, Class: "conform", Output: r.Note}
		var detail strings.Builder
		writeDetail(&detail, r)
		switch {
		case r.NotTried != "" && decides(r):
			c.Error = &junitMessage{Message: "not tried, so unknown" + cited(r) + ": " + r.NotTried}
		case r.NotTried != "":
			c.Skipped = &junitMessage{Message: "not tried" + cited(r) + ": " + r.NotTried}
		case r.Money == MoneyHarmed || r.Contract == ContractUnmet || r.Also != nil && r.Also.Contract == ContractUnmet:
			var why []string
			if r.Money == MoneyHarmed {
				why = append(why, "money harmed: "+r.ClaimMoney)
			}
			if r.Contract == ContractUnmet {
				why = append(why, unmet(r))
			}
			if r.Also != nil && r.Also.Contract == ContractUnmet {
				why = append(why, fmt.Sprintf("%s §%s unmet: %s", r.Also.Level, r.Also.Section, r.Also.Claim))
			}
			c.Failure = &junitMessage{Message: strings.Join(why, "; "), Text: detail.String()}
		case r.Money == MoneyUnobserved:
			c.Error = &junitMessage{Message: "could not observe the money: " + r.Saw}
		case r.Contract == ContractUnobserved && r.Level == "MUST":
			c.Error = &junitMessage{Message: fmt.Sprintf("could not observe MUST §%s: %s: %s", r.Section, r.ClaimContract, r.Note)}
		}
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Error != nil {
			suite.Errors++
		}
		if c.Skipped != nil {
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
